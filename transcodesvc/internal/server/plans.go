package server

import (
	"container/list"
	"sync"

	catalogv1 "github.com/ferrygw/ferry/services/api/gen/ferry/catalog/v1"
	"github.com/ferrygw/ferry/services/fluss/arrowmem"
	"github.com/ferrygw/ferry/transcodesvc/internal/convert"
	"github.com/ferrygw/ferry/transcodesvc/internal/route"
)

// planEntry is one compiled mapping and the converters built for it. A
// mapping that does not compile is cached too, with its error: the same
// mapping_id always means the same mapping, so it would fail again.
type planEntry struct {
	id   string
	plan *convert.Plan
	err  error
	// converters hold builders sized for this plan; one per concurrent job.
	converters sync.Pool
	// router splits batches of tables that place rows themselves (nil
	// otherwise); keyConverters convert the record keys of primary-key
	// tables.
	router        *route.Router
	keyConverters sync.Pool
	// framedKeys reads the framed keys that fill a key column (nil
	// otherwise), before the batch is converted.
	framedKeys   *convert.Plan
	keyUnframers sync.Pool
}

// arrowMem holds the Arrow buffers of converted batches between jobs: each
// job's record is released once its answer is encoded, and the next job
// builds one of about the same sizes.
var arrowMem arrowmem.Pool

func (e *planEntry) converter() *convert.Converter {
	if c, ok := e.converters.Get().(*convert.Converter); ok {
		return c
	}
	return e.plan.NewConverter(&arrowMem)
}

func (e *planEntry) keyConverter() *convert.Converter {
	if e.router.KeyPlan() == nil {
		return nil
	}
	if c, ok := e.keyConverters.Get().(*convert.Converter); ok {
		return c
	}
	return e.router.KeyPlan().NewConverter(&arrowMem)
}

func (e *planEntry) keyUnframer() *convert.Converter {
	if c, ok := e.keyUnframers.Get().(*convert.Converter); ok {
		return c
	}
	return e.framedKeys.NewConverter(&arrowMem)
}

// keyPlans are the plans e reads framed keys with: of a key column, or of
// a primary-key table's keys.
func (e *planEntry) framedKeyPlans() []*convert.Plan {
	var out []*convert.Plan
	if e.framedKeys != nil {
		out = append(out, e.framedKeys)
	}
	if e.router != nil && e.router.KeyPlan() != nil && e.router.KeyPlan().Framed() {
		out = append(out, e.router.KeyPlan())
	}
	return out
}

// framed reports whether the values or keys of e's topic are Schema
// Registry framed.
func (e *planEntry) framed() bool {
	return e.plan.Framed() || len(e.framedKeyPlans()) > 0
}

// compile compiles m into e.
func (e *planEntry) compile(m *catalogv1.TopicMapping) {
	if e.plan, e.err = convert.Compile(m); e.err != nil {
		return
	}
	if e.framedKeys, e.err = convert.CompileFramedKeys(m); e.err != nil || !route.Needed(m) {
		return
	}
	e.router, e.err = route.Compile(m, e.plan)
}

// planCache shares compiled plans across streams, keyed by mapping_id, and
// forgets the least recently used beyond its size.
type planCache struct {
	mu    sync.Mutex
	size  int
	byID  map[string]*list.Element
	order *list.List // front = most recently used
}

func newPlanCache(size int) *planCache {
	return &planCache{size: size, byID: map[string]*list.Element{}, order: list.New()}
}

// get returns the entry for m.MappingId, compiling m if needed.
func (c *planCache) get(m *catalogv1.TopicMapping) *planEntry {
	id := m.GetMappingId()
	c.mu.Lock()
	if el, ok := c.byID[id]; ok {
		c.order.MoveToFront(el)
		c.mu.Unlock()
		return el.Value.(*planEntry)
	}
	c.mu.Unlock()

	// Compile outside the lock; two streams racing on a new mapping both
	// compile it and one result wins, which is harmless.
	e := &planEntry{id: id}
	e.compile(m)

	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[id]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*planEntry)
	}
	c.byID[id] = c.order.PushFront(e)
	for c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byID, last.Value.(*planEntry).id)
	}
	return e
}

// lookup returns the entry for id if it is cached, without compiling.
func (c *planCache) lookup(id string) (*planEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[id]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*planEntry), true
}

func (c *planCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

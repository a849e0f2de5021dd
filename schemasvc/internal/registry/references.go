package registry

import (
	"context"
	"slices"

	"github.com/ferrygw/ferry/schemasvc/internal/store"
)

// referrers lists the ids of the schemas whose versions reference subject's
// version v, sorted: of live versions, and with includeDeleted also of
// soft-deleted ones; with otherSubjects, not of subject's own versions.
func referrers(st *store.State, subject string, v int32, includeDeleted, otherSubjects bool) []int32 {
	var ids []int32
	for _, s := range st.Subjects(true) {
		if otherSubjects && s == subject {
			continue
		}
		for _, ver := range st.Versions(s) {
			if ver.Deleted && !includeDeleted {
				continue
			}
			sch := st.Schema(ver.ID)
			if sch == nil {
				continue
			}
			for _, ref := range parseRefs(sch.References) {
				if ref.Subject == subject && ref.Version == v && !slices.Contains(ids, ver.ID) {
					ids = append(ids, ver.ID)
				}
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// referenceExists is Confluent's refusal to delete a version other schemas
// reference, naming the version as Confluent's schema key prints.
func referenceExists(subject string, v int32) *Error {
	return errorf(CodeReferenceExists, "One or more references exist to the schema {magic=1,keytype=SCHEMA,subject=%s,version=%d}.", subject, v)
}

// ReferencedBy returns the ids of the schemas that reference subject's
// version v (0: the latest, soft-deleted versions included), as Confluent's
// .../referencedby: of live versions, with includeDeleted also of
// soft-deleted ones.
func (r *Registry) ReferencedBy(ctx context.Context, subject string, v int32, includeDeleted bool) ([]int32, error) {
	out := []int32{}
	err := r.locked(ctx, func(st *store.State) error {
		all := st.Versions(subject)
		if len(all) == 0 {
			return subjectNotFound(subject)
		}
		found := all[len(all)-1]
		if v != 0 {
			found = findVersion(all, v)
		}
		if found == nil {
			return versionNotFound(v)
		}
		out = append(out, referrers(st, subject, found.Version, includeDeleted, false)...)
		return nil
	})
	return out, err
}

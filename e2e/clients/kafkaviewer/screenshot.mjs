// Opens Kafka Viewer's page (served by `streamlit run`) in Debian's chromium, picks a topic, loads
// its messages from the beginning, opens the first one, saves a full-page screenshot and prints the
// page's text as JSON, for the suite to compare with what Fluss holds.
//
// usage: node screenshot.mjs URL TOPIC OUT.png
import { chromium } from 'playwright-core';

const [url, topic, out] = process.argv.slice(2);
if (!url || !topic || !out) {
  console.error('usage: node screenshot.mjs URL TOPIC OUT.png');
  process.exit(2);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  // The machine has no network but loopback: no background connections, no sandbox as root.
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1800 } });
  page.setDefaultTimeout(60_000);
  await page.goto(url);
  await page.getByText('Status: Connected').waitFor();

  // The topic select box: open it, type the name, take the one option.
  const select = page.getByTestId('stSelectbox').first();
  await select.click();
  await page.keyboard.type(topic);
  await page.getByRole('option', { name: topic, exact: true }).click();
  await page.getByText('From beginning').click();
  await page.getByRole('button', { name: 'Load Messages' }).click();
  await page.getByText('Message Details').waitFor();
  const first = page.getByText(/^#1 partition=\d+ offset=\d+$/);
  await first.click();
  await page.getByTestId('stCode').first().waitFor();
  await page.screenshot({ path: out, fullPage: true });
  // What the page shows: the status line, the selected topic, the statistics, the first message.
  const metrics = {};
  for (const m of await page.getByTestId('stMetric').all()) {
    metrics[(await m.getByTestId('stMetricLabel').innerText()).trim()] = (await m.getByTestId('stMetricValue').innerText()).trim();
  }
  const selected = await select.locator('input').count() > 0
    ? await select.locator('input').first().inputValue() : '';
  console.log(JSON.stringify({
    text: await page.locator('body').innerText(),
    selected: selected || (await select.innerText()).trim(),
    metrics,
    first: await first.innerText(),
    code: await page.getByTestId('stCode').first().innerText(),
  }));
} finally {
  await browser.close();
}

// The management web page in headless Chromium (Debian's) through playwright-core, against a
// node with traffic: logs in, waits for the tables and the rates to show real figures, checks
// them against the API, and saves a screenshot.
//
// usage: node page_check.js HTTP_PORT SCREENSHOT.png
// Exits 0 when every check held; otherwise prints what did not and exits 1.
"use strict";

const { chromium } = require("playwright-core");

const [port, screenshot] = process.argv.slice(2);
const base = `http://127.0.0.1:${port}`;
const auth = "Basic " + Buffer.from("guest:guest").toString("base64");

async function api(method, path, body) {
  const r = await fetch(base + "/api" + path, {
    method,
    headers: { Authorization: auth, "Content-Type": "application/json" },
    body: body && JSON.stringify(body),
  });
  const text = await r.text();
  return text ? JSON.parse(text) : null;
}

// Publishes to and takes from "page-demo" until stopped, so that every rate has something.
function traffic() {
  let running = true;
  const loop = async () => {
    while (running) {
      for (let i = 0; i < 20; i++)
        await api("POST", "/exchanges/%2F/amq.default/publish",
          { routing_key: "page-demo", payload: `order ${i}`, properties: {} });
      await api("POST", "/queues/%2F/page-demo/get",
        { count: 10, ackmode: "ack_requeue_false", encoding: "auto" });
    }
  };
  const done = loop();
  return async () => { running = false; await done; };
}

async function main() {
  await api("PUT", "/queues/%2F/page-demo", { durable: true });
  await api("PUT", "/exchanges/%2F/orders", { type: "topic", durable: true });
  const stop = traffic();
  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu"],
  });
  const failures = [];
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1100 } });
    page.on("pageerror", (e) => failures.push("page error: " + e.message));
    await page.goto(base + "/");
    await page.fill("#user", "guest");
    await page.fill("#password", "guest");
    await page.click("button[type=submit]");
    await page.waitForSelector("#queues tbody tr", { timeout: 30000 });
    // Rates need two readings a second apart and traffic between them: wait until they show.
    await page.waitForFunction(() => Number(document.getElementById("r-publish").textContent
      .replace(/,/g, "")) > 0 && Number(document.getElementById("r-deliver").textContent
      .replace(/,/g, "")) > 0, null, { timeout: 30000 });
    await page.waitForFunction(() => window.Chart && Chart.getChart("rates") &&
      Chart.getChart("rates").data.labels.length >= 2, null, { timeout: 30000 });
    const rows = await page.$$eval("#queues tbody tr",
      (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
    const demo = rows.find((r) => r[1] === "page-demo");
    if (!demo) failures.push("queue page-demo not in the table: " + JSON.stringify(rows));
    else if (!(Number(demo[6].replace(/,/g, "")) > 0))
      failures.push("page-demo shows no publish rate: " + JSON.stringify(demo));
    const exchanges = await page.$$eval("#exchanges tbody tr", (trs) => trs.map((tr) =>
      tr.cells[1].textContent));
    if (!exchanges.includes("orders")) failures.push("exchange orders missing: " + exchanges);
    const apiQueue = await api("GET", "/queues/%2F/page-demo");
    if (!(apiQueue.message_stats.publish > 0)) failures.push("API shows no publishes");
    // Peek from the page: the panel fills with the queue's ready messages.
    const demoRow = page.locator("#queues tbody tr", { hasText: "page-demo" });
    await demoRow.locator("button", { hasText: "peek" }).click();
    await page.waitForSelector("#peek:not([hidden]) tbody tr", { timeout: 30000 });
    const peeked = await page.$$eval("#peek tbody tr", (trs) => trs.length);
    if (peeked === 0) failures.push("peek showed nothing");
    await page.screenshot({ path: screenshot, fullPage: true });
  } finally {
    await stop();
    await browser.close();
  }
  for (const f of failures) console.log("FAILED:", f);
  process.exit(failures.length ? 1 : 0);
}

main().catch((e) => {
  console.log("FAILED:", e.stack || e);
  process.exit(1);
});

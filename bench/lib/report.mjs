// Turns the measurements into bench/results.json (fixed shape) and bench/RESULTS.md (for people).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import { dirname, join } from "node:path";
import { BULK_SIZES, SCALING_SIZES } from "./scenario.mjs";

const require = createRequire(import.meta.url);

const round = (value, digits) => (value === null || value === undefined ? null : Number(value.toFixed(digits)));
const kib = (bytes) => round(bytes / 1024, 2);

function packageVersion(name, from = require) {
  try {
    return JSON.parse(readFileSync(join(dirname(from.resolve(`${name}/package.json`)), "package.json"), "utf8"))
      .version;
  } catch {
    return "unknown";
  }
}

function workerdVersion() {
  // The workerd that Miniflare runs: resolved from Miniflare's own location.
  try {
    const fromMiniflare = createRequire(require.resolve("miniflare"));
    const binary = fromMiniflare("workerd").default;
    const reported = execFileSync(binary, ["--version"], { encoding: "utf8" }).trim();
    return `${reported} (npm workerd ${packageVersion("workerd", fromMiniflare)})`;
  } catch {
    return "unknown";
  }
}

export function machine() {
  let nproc;
  try {
    nproc = Number(execFileSync("nproc", { encoding: "utf8" }).trim());
  } catch {
    nproc = os.availableParallelism();
  }
  return {
    nproc,
    cpu: os.cpus()[0]?.model ?? "unknown",
    memoryGiB: round(os.totalmem() / 1024 ** 3, 1),
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
    workerd: workerdVersion(),
    miniflare: packageVersion("miniflare"),
    wrangler: packageVersion("wrangler"),
    autocannon: packageVersion("autocannon"),
    loadAverage: os.loadavg().map((value) => round(value, 2)),
  };
}

const LOAD_NAMES = ["list", "get-one", "post-existing", "post-new", "delete"];

/** results.json (the fixed shape) plus the target verdicts and a console table. */
export function summarise({ figures, rows, scaling, scalingRows, bundle, pageSize }) {
  const ceilingRps = figures.ceiling.rps;
  const entry = (name) => {
    const f = figures[name];
    return {
      rps: round(f.rps, 1),
      p50_ms: round(f.p50, 2),
      p99_ms: round(f.p99, 2),
      errors: f.errors,
      ratio: round(f.rps / ceilingRps, 3),
      rows_read: rows[name].rowsRead,
      rows_written: rows[name].rowsWritten,
    };
  };
  const endpoints = Object.fromEntries(LOAD_NAMES.map((name) => [name, entry(name)]));
  const bulk = Object.fromEntries(BULK_SIZES.map((n) => [String(n), entry(`bulk-${n}`)]));
  const listScaling = Object.fromEntries(
    SCALING_SIZES.map((size) => [
      String(size),
      {
        p50_ms: round(scaling[`${size}:1`].p50, 2),
        rows_read: scalingRows[`${size}:1`].rowsRead,
        page40_p50_ms: round(scaling[`${size}:40`].p50, 2),
        page40_rows_read: scalingRows[`${size}:40`].rowsRead,
      },
    ]),
  );
  const bundleGzipKib = kib(bundle.gzip);
  const rowLimit = pageSize + 2;

  const targets = {};
  const directions = {};
  const target = (name, value, direction, limit) => {
    directions[name] = direction;
    targets[name] = { value, limit, pass: value !== null && (direction === ">=" ? value >= limit : value <= limit) };
  };
  target("list_rps_vs_ceiling", endpoints.list.ratio, ">=", 0.6);
  target("get_one_rps_vs_ceiling", endpoints["get-one"].ratio, ">=", 0.7);
  target("bulk_100_p50_vs_bulk_1_p50", round(bulk["100"].p50_ms / bulk["1"].p50_ms, 2), "<=", 4);
  target("list_page1_rows_read_300_subscriptions", endpoints.list.rows_read, "<=", rowLimit);
  target("list_page1_rows_read_10_subscriptions", listScaling["10"].rows_read, "<=", rowLimit);
  target("list_page1_rows_read_10000_subscriptions", listScaling["10000"].rows_read, "<=", rowLimit);
  target("bundle_gzip_kib", bundleGzipKib, "<=", 100);

  const results = {
    ceiling_rps: round(ceilingRps, 1),
    endpoints,
    bulk,
    list_scaling: listScaling,
    bundle_gzip_kib: bundleGzipKib,
    targets,
  };

  const lines = [["endpoint", "req/s", "ratio", "p50 ms", "p99 ms", "errors", "rows r/w"]];
  for (const name of ["ceiling", "d1-floor"]) {
    const f = figures[name];
    lines.push([name, round(f.rps, 1), round(f.rps / ceilingRps, 3), round(f.p50, 2), round(f.p99, 2), f.errors, "-"]);
  }
  for (const [name, e] of [...Object.entries(endpoints), ...Object.entries(bulk).map(([n, e]) => [`bulk-${n}`, e])]) {
    lines.push([name, e.rps, e.ratio, e.p50_ms, e.p99_ms, e.errors, `${e.rows_read}/${e.rows_written}`]);
  }
  const widths = lines[0].map((_, i) => Math.max(...lines.map((line) => String(line[i]).length)));
  const table = lines.map((line) => line.map((cell, i) => String(cell).padStart(widths[i])).join("  ")).join("\n");

  return { results, directions, table };
}

const cell = (value, digits = 2) => (value === null || value === undefined ? "–" : Number(value).toFixed(digits));
const int = (value) => (value === null || value === undefined ? "–" : Math.round(value).toLocaleString("en-US"));

/**
 * A Markdown table with padded columns (the layout Biome's formatter keeps). `align` has "l" or "r"
 * per column.
 */
function table(header, align, rows) {
  const all = [header, ...rows].map((row) => row.map(String));
  const widths = header.map((_, i) => Math.max(3, ...all.map((row) => row[i].length)));
  const line = (row) =>
    `| ${row.map((value, i) => (align[i] === "r" ? value.padStart(widths[i]) : value.padEnd(widths[i]))).join(" | ")} |`;
  const rule = `| ${widths.map((w, i) => (align[i] === "r" ? `${"-".repeat(w - 1)}:` : "-".repeat(w))).join(" | ")} |`;
  return [line(all[0]), rule, ...all.slice(1).map(line)];
}

export function renderMarkdown({
  summary,
  figures,
  rows,
  scaling,
  scalingRows,
  bundle,
  ceilingTimeline,
  settings,
  started,
  finished,
  loadAverageBefore,
  deletePool,
  logs,
}) {
  const { results, directions } = summary;
  const m = machine();
  const ceilingCpu = figures.ceiling.cpuUsPerRequest;
  const floor = figures["d1-floor"];
  const out = [];
  const push = (...lines) => out.push(...lines);

  push(
    "# Benchmark results",
    "",
    `Generated by \`npm run bench\` on ${started.toISOString()} (took ${Math.round((finished - started) / 1000)} s).`,
    "How to run it and how to read it: [README.md](README.md). Raw figures: [results.json](results.json).",
    "",
    "## Machine",
    "",
    ...table(
      ["", ""],
      ["l", "l"],
      [
        ["cores (`nproc`)", m.nproc],
        ["CPU", m.cpu],
        ["memory", `${m.memoryGiB} GiB`],
        ["kernel", m.kernel],
        ["Node.js (harness, autocannon)", m.node],
        ["workerd", m.workerd],
        ["miniflare / wrangler / autocannon", `${m.miniflare} / ${m.wrangler} / ${m.autocannon}`],
        ["load average (1, 5, 15 min) before / after", `${loadAverageBefore.join(", ")} / ${m.loadAverage.join(", ")}`],
      ],
    ),
    "",
    "## How it was measured",
    "",
    "- Each worker is the minified bundle of `wrangler deploy --dry-run --minify`, served by one workerd process",
    "  (Miniflare) on its own direct socket on 127.0.0.1: no Miniflare entry worker, no request logging, no proxy.",
    "  D1 is Miniflare's local D1 (SQLite in the same workerd), persisted in a temporary directory, migrations from",
    "  `drizzle/`.",
    `- Load: autocannon in the harness process, ${settings.connections} connections, no pipelining, keep-alive.`,
    `  Every endpoint and reference: a ${settings.warmupSeconds} s warm-up, then ${settings.rounds} samples of ${settings.seconds} s`,
    "  in rounds that interleave ceiling samples with the endpoints (list and get-one come right after one), so a",
    "  drift of the machine falls on all figures alike. req/s = responses / wall time; p50 / p99 over all of them.",
    "- Served like `wrangler dev` would (bindings and vars of wrangler.toml, plus `AUTH_JWT_SECRET`) except: static",
    "  assets left out (the measured routes always run the worker first); rate-limit bindings kept but with a limit no",
    "  run reaches; the workers' log lines counted instead of printed" +
      ` (${logs.lines} this run${
        Object.keys(logs.byLevel).length
          ? `: ${Object.entries(logs.byLevel)
              .map(([level, n]) => `${n} ${level}`)
              .join(", ")}`
          : ""
      }).`,
    "- req/s and latencies count only responses with the expected status (list, get-one, POST existing and bulk: 200;",
    "  POST new: 201; DELETE: 204). Errors: connection errors, timeouts and every response with another status.",
    `- Rows: median of ${settings.probes} sequential requests through an instrumented build of the same app`,
    "  (bench/instrumented-worker.ts) that sums D1's `meta.rows_read` / `meta.rows_written` over every D1 result of",
    "  the request; never under load. D1 calls: round trips to D1 (one statement or one batch each).",
    "- workerd CPU: user + system CPU time of the workerd process during the samples, per response (from /proc).",
    "  Unlike req/s it hardly depends on what else the machine was doing.",
    "",
    "## Endpoints",
    "",
    `Ceiling (bare Hono worker, constant JSON document): **${int(results.ceiling_rps)} req/s**, p50 ${cell(figures.ceiling.p50)} ms,` +
      ` p99 ${cell(figures.ceiling.p99)} ms, workerd CPU ${int(ceilingCpu)} µs/request.`,
    "",
    `D1 floor (the same worker plus one \`SELECT 1\` on the local D1 per request): **${int(floor.rps)} req/s**` +
      ` (${cell(floor.rps / results.ceiling_rps, 3)} of the ceiling), p50 ${cell(floor.p50)} ms, p99 ${cell(floor.p99)} ms,` +
      ` workerd CPU ${int(floor.cpuUsPerRequest)} µs/request. No endpoint that makes a D1 call can beat it here.`,
    "",
  );
  const endpointColumns = [
    "req/s",
    "ratio to ceiling",
    "ratio to D1 floor",
    "p50 ms",
    "p99 ms",
    "errors",
    "rows read",
    "rows written",
    "D1 calls",
    "workerd CPU µs/req",
  ];
  const cells = (name, e) => [
    int(e.rps),
    cell(e.ratio, 3),
    cell(e.rps / floor.rps, 3),
    cell(e.p50_ms),
    cell(e.p99_ms),
    e.errors,
    e.rows_read,
    e.rows_written,
    rows[name].d1Calls,
    int(figures[name].cpuUsPerRequest),
  ];
  const labels = {
    list: "list (page 1 of 25, user with 300)",
    "get-one": "get one",
    "post-existing": "POST existing (200)",
    "post-new": "POST new (201)",
    delete: "DELETE (204, a different one each time)",
  };
  push(
    ...table(
      ["endpoint", ...endpointColumns],
      ["l", ...endpointColumns.map(() => "r")],
      Object.entries(results.endpoints).map(([name, e]) => [labels[name] ?? name, ...cells(name, e)]),
    ),
    "",
    "### Bulk: POST /v1/operations, new guids in every request",
    "",
    ...table(
      ["adds per request", ...endpointColumns, "adds/s"],
      ["r", ...endpointColumns.map(() => "r"), "r"],
      Object.entries(results.bulk).map(([n, e]) => [n, ...cells(`bulk-${n}`, e), int(e.rps * Number(n))]),
    ),
    "",
    "## List scaling",
    "",
    "Users with 10, 1 000 and 10 000 active subscriptions (plus one tombstone per four, interleaved in list order),",
    `page size 25. Page 40 starts at item 976: past the end for 10, the last page for 1 000. ${settings.scalingSeconds} s`,
    "of load each.",
    "",
    ...table(
      ["subscriptions", "page 1 p50 ms", "page 1 rows read", "page 40 p50 ms", "page 40 rows read", "page 40 req/s"],
      ["r", "r", "r", "r", "r", "r"],
      Object.entries(results.list_scaling).map(([size, s]) => [
        int(Number(size)),
        cell(s.p50_ms),
        s.rows_read,
        cell(s.page40_p50_ms),
        s.page40_rows_read,
        int(scaling[`${size}:40`].rps),
      ]),
    ),
    "",
    `Spread of rows read between the probes of one configuration: ${spreadNote(scalingRows)}.`,
    "",
    "## Targets",
    "",
    ...table(
      ["target", "value", "limit", "verdict"],
      ["l", "r", "r", "l"],
      Object.entries(results.targets).map(([name, t]) => [
        name,
        t.value,
        `${directions[name]} ${t.limit}`,
        t.pass ? "PASS" : "**MISS**",
      ]),
    ),
    "",
    "## Noise and CPU per request",
    "",
    `Ceiling samples in run order (req/s): ${ceilingTimeline.map((v) => int(v)).join(", ")}.`,
    `Samples of list: ${figures.list.samplesRps.map((v) => int(v)).join(", ")}; of get-one: ${figures[
      "get-one"
    ].samplesRps
      .map((v) => int(v))
      .join(", ")}.`,
    "On a shared 2-core machine other processes move req/s by tens of percent from one second to the next; workerd",
    "CPU per request, and its ratio to the ceiling's, is the steadier measure of what a request costs.",
    "",
    ...table(
      ["endpoint", "workerd CPU µs/req", "ceiling CPU / endpoint CPU", "D1 floor CPU / endpoint CPU"],
      ["l", "r", "r", "r"],
      Object.keys(figures)
        .filter((name) => name !== "ceiling")
        .map((name) => {
          const cpu = figures[name].cpuUsPerRequest;
          return [
            name,
            int(cpu),
            cpu && ceilingCpu ? cell(ceilingCpu / cpu, 3) : "–",
            cpu && floor.cpuUsPerRequest ? cell(floor.cpuUsPerRequest / cpu, 3) : "–",
          ];
        }),
    ),
    "",
    `The DELETE runs draw from a pool of ${int(deletePool)} seeded subscriptions, one per request.`,
    "",
    "## Bundle",
    "",
    `The app's minified bundle (\`wrangler deploy --dry-run --minify\`): **${cell(bundle.gzip / 1024)} KiB gzip**,` +
      ` ${cell(bundle.bytes / 1024)} KiB minified${bundle.wranglerSizeLine ? ` (wrangler: "${bundle.wranglerSizeLine}")` : ""}.`,
    "",
    "What takes the space, by package (minified bytes from esbuild's metafile; gzip alone: that package's code gzipped",
    "on its own, cut out of the bundle along the source map, so the column adds up to a little more than the total):",
    "",
  );
  const totalMinified = bundle.packages.reduce((sum, p) => sum + p.minified, 0);
  push(
    ...table(
      ["package", "minified KiB", "share", "gzip alone KiB"],
      ["l", "r", "r", "r"],
      bundle.packages.map((p) => [
        p.name,
        cell(p.minified / 1024),
        `${cell((100 * p.minified) / totalMinified, 1)} %`,
        p.gzipAlone === null ? "–" : cell(p.gzipAlone / 1024),
      ]),
    ),
    "",
    "Largest files:",
    "",
    ...table(
      ["file", "minified KiB"],
      ["l", "r"],
      bundle.topFiles.map((f) => [f.file, cell(f.bytes / 1024)]),
    ),
  );
  if (bundle.zodLocales.files > 0) {
    const gzip = bundle.zodLocales.gzipAlone ? `, ${cell(bundle.zodLocales.gzipAlone / 1024)} KiB gzip` : "";
    push(
      "",
      `zod's locale files (error messages in ${bundle.zodLocales.files} languages) alone weigh` +
        ` ${cell(bundle.zodLocales.bytes / 1024)} KiB minified${gzip}: \`import { z } from "zod"\` (zod classic) keeps` +
        " every locale reachable, so none is tree-shaken.",
    );
  }
  push("");
  return out.join("\n");
}

function spreadNote(scalingRows) {
  const spreads = Object.entries(scalingRows)
    .filter(([, r]) => r.spread.read[0] !== r.spread.read[1])
    .map(([key, r]) => `${key.replace(":", " page ")}: ${r.spread.read[0]}–${r.spread.read[1]}`);
  return spreads.length === 0 ? "none, every probe read the same rows" : spreads.join("; ");
}

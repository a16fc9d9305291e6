// One load sample: autocannon against a URL for a fixed time, from this process, over loopback.
// Latencies are taken from autocannon's per-response event (float milliseconds) rather than its
// histogram, which keeps whole milliseconds only; requests/s is responses with the expected status /
// wall time of the sample (any other status is an error).
// When workerd's pid is known, the CPU time workerd spent during the sample is read from /proc.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import autocannon from "autocannon";

let clockTicks;
function ticksPerSecond() {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** CPU milliseconds (user + system) the process has used so far, or undefined. */
export function cpuMs(pid) {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond();
  } catch {
    return undefined;
  }
}

/**
 * @typedef {{ responses: number, seconds: number, statuses: Record<string, number>, unexpected: number,
 *   errors: number, latencies: number[], cpuMs: number | undefined }} Sample
 */

/**
 * @param {{ base: URL, endpoint: import("./scenario.mjs").Endpoint, seconds: number, connections: number,
 *   workerdPid?: number }} options
 * @returns {Promise<Sample>}
 */
export function runSample({ base, endpoint, seconds, connections, workerdPid }) {
  const latencies = [];
  const statuses = {};
  const expected = endpoint.expected;
  let unexpected = 0;
  // A static request is built once; a dynamic one (new guid, next guid to delete) per request.
  const request = endpoint.dynamic
    ? { ...endpoint.next(), setupRequest: (previous) => ({ ...previous, ...endpoint.next() }) }
    : endpoint.next();
  const cpuBefore = cpuMs(workerdPid);
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const tracker = autocannon(
      {
        url: base.origin,
        connections,
        duration: seconds,
        pipelining: 1,
        timeout: 10,
        requests: [request],
      },
      (err, result) => {
        if (err) return reject(err);
        const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
        const cpuAfter = cpuMs(workerdPid);
        resolve({
          // responses with the expected status
          responses: latencies.length,
          seconds: elapsed,
          statuses,
          unexpected,
          // connection errors and timeouts, plus every response whose status was not the expected one
          errors: (result.errors ?? 0) + (result.timeouts ?? 0) + unexpected,
          latencies,
          cpuMs: cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : undefined,
        });
      },
    );
    // Only responses with the expected status count as served (req/s, latencies): a fast 4xx or 5xx
    // must not pass for throughput.
    tracker.on("response", (_client, statusCode, _bytes, responseTime) => {
      statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
      if (expected.includes(statusCode)) latencies.push(responseTime);
      else unexpected++;
    });
  });
}

/** Nearest-rank percentile of unsorted values (sorted in place). */
export function percentile(values, p) {
  if (values.length === 0) return null;
  values.sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * values.length));
  return values[rank - 1];
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** Folds several samples of one endpoint into its figures. */
export function combine(samples) {
  const latencies = samples.flatMap((sample) => sample.latencies);
  const responses = samples.reduce((sum, sample) => sum + sample.responses, 0);
  const seconds = samples.reduce((sum, sample) => sum + sample.seconds, 0);
  // CPU per request: the median over the samples of each sample's CPU ÷ its responses. Another process
  // that disturbs one sample (on a shared machine, CPU per request swells under contention) moves the
  // median little, where it would move a pooled total.
  const cpuKnown = samples.every((sample) => sample.cpuMs !== undefined);
  const perSample = samples.filter((sample) => sample.responses > 0).map((s) => (s.cpuMs * 1000) / s.responses);
  const statuses = {};
  for (const sample of samples) {
    for (const [status, n] of Object.entries(sample.statuses)) statuses[status] = (statuses[status] ?? 0) + n;
  }
  return {
    responses,
    seconds,
    rps: seconds > 0 ? responses / seconds : 0,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    errors: samples.reduce((sum, sample) => sum + sample.errors, 0),
    statuses,
    cpuUsPerRequest: cpuKnown && perSample.length > 0 ? median(perSample) : null,
    samplesRps: samples.map((sample) => (sample.seconds > 0 ? sample.responses / sample.seconds : 0)),
    // Each sample's CPU per request (null without responses) and the ceiling's sample just before it, in round
    // order: what the paired ratios of the isolate targets are made of (report.mjs).
    samplesCpuUs: samples.map((sample) =>
      cpuKnown && sample.responses > 0 ? (sample.cpuMs * 1000) / sample.responses : null,
    ),
    samplesCeilingCpuUs: samples.map((sample) => sample.ceilingCpu ?? null),
  };
}

// `npm run bench -- --profile <scenarios>`: the V8 CPU profile of the isolate-only worker while it serves one
// isolate scenario under load (the tape replayed, as the isolate CPU figures are measured), through workerd's own
// inspector (the DevTools Profiler domain, via inspector.mjs). Writes each profile as a .cpuprofile (Chrome
// DevTools and VS Code open it) and returns the functions that took the most time themselves.

/** Sampling interval in µs: fine enough for a request of 100 µs, coarse enough not to weigh on it much. */
const SAMPLING_INTERVAL_US = 50;

/**
 * Self time by function (name, script and line), from a profile's nodes and samples, largest first; idle and
 * garbage-collector time are kept as their own entries (`(idle)`, `(garbage collector)`, `(program)`).
 */
export function selfTimes(profile) {
  const byNode = new Map(profile.nodes.map((node) => [node.id, node]));
  const ticks = new Map();
  for (const id of profile.samples) ticks.set(id, (ticks.get(id) ?? 0) + 1);
  const total = profile.samples.length;
  const byFunction = new Map();
  for (const [id, count] of ticks) {
    const { functionName, url, lineNumber } = byNode.get(id).callFrame;
    const script = url.slice(url.lastIndexOf("/") + 1);
    const key = `${functionName || "(anonymous)"} ${script}${script ? `:${lineNumber + 1}` : ""}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + count);
  }
  return [...byFunction.entries()]
    .map(([name, count]) => ({ name, share: count / total }))
    .sort((a, b) => b.share - a.share);
}

/**
 * Profiles the isolate while `load()` runs (the scenario's load, from the harness) and returns the profile.
 * `inspector` is a connected session (inspector.mjs) to the isolate-only worker's isolate.
 */
export async function profileWhile(inspector, load) {
  await inspector.whileWaking("Profiler.enable");
  await inspector.whileWaking("Profiler.setSamplingInterval", { interval: SAMPLING_INTERVAL_US });
  await inspector.whileWaking("Profiler.start");
  let stopped;
  try {
    await load();
  } finally {
    stopped = await inspector.whileWaking("Profiler.stop");
  }
  return stopped.profile;
}

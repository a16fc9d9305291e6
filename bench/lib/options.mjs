// Command line and environment knobs of `npm run bench`.

export const USAGE = `Usage: npm run bench -- [options]

Builds the worker, serves it in workerd (Miniflare) beside a bare Hono worker (the ceiling), a D1 floor
and the isolate-only app, seeds D1, measures every endpoint, and writes bench/results.json and
bench/RESULTS.md. Exit 0 when the harness ran (a missed target prints MISS), 1 when it broke.

Options:
  -h, --help          print this and exit (touches nothing)
  --env <name>        serve and build with the bindings of the wrangler environment <name> (also BENCH_ENV),
                      e.g. a two-shard configuration; results go to results-<name>.json / RESULTS-<name>.md
  --isolate-only      only the isolate-only CPU figures (app with D1 and rate limiters replayed in the
                      isolate) beside the ceiling; prints them and writes no file
  --feeds-only        only the feed round's figures (a scheduled run's isolate CPU and subrequests, the parse of
                      a 64 KiB channel head; bench/README.md, "The feed round"); prints them and writes no file
  --skip <names>      leave endpoints out, comma-separated (e.g. patch,sync,opml-import); their figures are null;
                      heavy-listener leaves out the heavy listener's table, far-edge its run with delayed D1 calls,
                      feeds the feed round's figures
  --out <dir>         write the results to <dir> instead of bench/
  --compare <ref>     also build the app of git <ref> (a commit, branch or tag) as a second isolate-only
                      worker and interleave its samples with this tree's: isolate CPU before and after
  --profile <names>   instead of measuring, profile the isolate (V8's sampling profiler, through workerd's
                      inspector; the isolate-only app built without --minify) while it serves each named isolate
                      scenario (comma-separated, e.g. bulk-100,heavy:gpodder-full-episodes) for
                      BENCH_PROFILE_SECONDS (5); writes <out or the temporary directory>/<name>.cpuprofile and
                      prints the functions that took the most time themselves

Environment: BENCH_SECONDS (2) per load sample, BENCH_ROUNDS (4, at least 3) samples per endpoint,
BENCH_WARMUP_SECONDS (1), BENCH_CONNECTIONS (10), BENCH_ISOLATE_SECONDS (1) per isolate-only sample,
BENCH_ENV (as --env), BENCH_KEEP_TMP=1 keeps the temporary directory (bundles, D1 files).
`;

/** Rounds of samples at least: each isolate target is the median of one ratio per round. */
export const MIN_ROUNDS = 3;

const numberFrom = (env, name, fallback) => {
  const value = Number(env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
};

/** Parses argv (after `node run.mjs`) and the environment; throws with a message on a bad option. */
export function parseOptions(argv, env) {
  const options = {
    help: false,
    isolateOnly: false,
    feedsOnly: false,
    skip: new Set(),
    env: env.BENCH_ENV?.trim() || undefined,
    out: undefined,
    compare: undefined,
    profile: undefined,
    keepTmp: env.BENCH_KEEP_TMP === "1",
    settings: {
      seconds: numberFrom(env, "BENCH_SECONDS", 2),
      rounds: Math.round(numberFrom(env, "BENCH_ROUNDS", 4)),
      warmupSeconds: numberFrom(env, "BENCH_WARMUP_SECONDS", 1),
      connections: Math.round(numberFrom(env, "BENCH_CONNECTIONS", 10)),
      isolateSeconds: numberFrom(env, "BENCH_ISOLATE_SECONDS", 1),
      profileSeconds: numberFrom(env, "BENCH_PROFILE_SECONDS", 5),
      probes: 5,
    },
  };
  const value = (i, name) => {
    const next = argv[i + 1];
    if (next === undefined || next.startsWith("--")) throw new Error(`${name} needs a value`);
    return next;
  };
  // Every isolate target is a median over the rounds: fewer than 3 would let one noisy sample decide it.
  if (env.BENCH_ROUNDS !== undefined && Math.round(Number(env.BENCH_ROUNDS)) < MIN_ROUNDS) {
    throw new Error(`BENCH_ROUNDS must be at least ${MIN_ROUNDS} (each target is the median over the rounds)`);
  }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "-h" || arg === "--help") options.help = true;
    else if (arg === "--isolate-only") options.isolateOnly = true;
    else if (arg === "--feeds-only") options.feedsOnly = true;
    else if (arg === "--env") options.env = value(i++, arg);
    else if (arg === "--out") options.out = value(i++, arg);
    else if (arg === "--compare") options.compare = value(i++, arg);
    else if (arg === "--profile") {
      options.profile = value(i++, arg)
        .split(",")
        .map((name) => name.trim())
        .filter(Boolean);
      options.isolateOnly = true;
    } else if (arg === "--skip") {
      for (const name of value(i++, arg).split(",")) if (name.trim()) options.skip.add(name.trim());
    } else throw new Error(`unknown option ${arg}`);
  }
  return options;
}

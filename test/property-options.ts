import { env } from "cloudflare:test";

/**
 * fast-check's options for a property test: its own fixed seed and number of cases (reproducible runs), unless
 * PROPERTY_SEED (one seed for every property) or PROPERTY_RUNS_SCALE (each property's cases times it, at least
 * one) are set where vitest runs: CI's longer runs raise them, a contributor iterating on one file can lower them.
 * The `shards` project runs PROPERTY_PROJECT_SHARE of them (vitest.config.ts: a tenth there, all in `single`): the
 * same seed, so the first cases of the same sequence, each with its user in whichever database the map puts it.
 * fast-check prints the seed and path of a failure, so any run can be repeated.
 */
export function propertyOptions(seed: number, numRuns: number): { seed: number; numRuns: number } {
  const seedOverride = env.PROPERTY_SEED ? Number(env.PROPERTY_SEED) : undefined;
  const scale = (env.PROPERTY_RUNS_SCALE ? Number(env.PROPERTY_RUNS_SCALE) : 1) * Number(env.PROPERTY_PROJECT_SHARE);
  if (seedOverride !== undefined && !Number.isInteger(seedOverride)) {
    throw new Error(`PROPERTY_SEED must be an integer, not "${env.PROPERTY_SEED}"`);
  }
  if (!(scale > 0)) throw new Error(`PROPERTY_RUNS_SCALE must be a positive number, not "${env.PROPERTY_RUNS_SCALE}"`);
  return { seed: seedOverride ?? seed, numRuns: Math.max(1, Math.round(numRuns * scale)) };
}

/**
 * A property test's timeout: `ms` at its default size, and in proportion when PROPERTY_RUNS_SCALE raises it. A
 * timeout here only catches a hang: `ms` is several times what the test takes on a 2-core machine running two
 * suites at once (a test's speed is the bench's business, never a timeout's).
 */
export function propertyTimeout(ms: number): number {
  const scale = env.PROPERTY_RUNS_SCALE ? Number(env.PROPERTY_RUNS_SCALE) : 1;
  return Math.round(ms * Math.max(1, scale));
}

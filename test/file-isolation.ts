import { env } from "cloudflare:test";

// Test files run side by side (vitest.config.ts: maxWorkers), each in a Miniflare of its own (isolate), so that
// no file can see another's rate-limiter counters or D1 rows. This holds the suite to it: the probe allows one
// call a minute, and each file spends it as it starts; a second file on the same counters is refused here, before
// any of its tests could count on a limiter nobody else spends.
const probe = await env.FILE_ISOLATION_PROBE.limit({ key: "file" });
if (!probe.success) {
  throw new Error(
    "This test file shares its rate-limiter counters with another file (vitest.config.ts must keep isolate: true, one Miniflare per file).",
  );
}

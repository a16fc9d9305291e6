// A third reference, beside the ceiling and the D1 floor: the bare Hono worker plus one rate-limit call
// and the very D1 statements that one app request runs (recorded by bench/instrumented-worker.ts,
// loaded by the harness with `POST /__bench/statements`, chosen per request by X-Bench-Scenario), on
// the real local D1 through a D1 session as the app opens one. It answers the constant document.
// The D1 floor runs `SELECT 1`; locally the simulator's cost grows with the statement and its answer,
// so this floor shows what the app's own statements cost the simulator, and the app's CPU above it is
// what its JavaScript costs on the real path. Only read scenarios are loaded (a write would change
// what the next request finds).
import { Hono } from "hono";
import { CONSTANT_DOCUMENT } from "./constant-document";
import { type RecordedCall, type Recordings, SCENARIO_HEADER } from "./recording";

let scenarios: Map<string, RecordedCall[]> = new Map();

async function run(session: D1DatabaseSession, call: RecordedCall): Promise<void> {
  const statements = call.sql.map((sql, i) => session.prepare(sql).bind(...call.params[i]));
  if (call.op === "batch") await session.batch(statements);
  else if (call.op === "raw") await statements[0].raw();
  else if (call.op === "first") await statements[0].first();
  else if (call.op === "run") await statements[0].run();
  else await statements[0].all();
}

const app = new Hono<{ Bindings: Cloudflare.Env }>();
app.post("/__bench/statements", async (c) => {
  scenarios = new Map(Object.entries(await c.req.json<Recordings>()));
  return c.body(null, 204);
});
app.all("*", async (c) => {
  const calls = scenarios.get(c.req.header(SCENARIO_HEADER) ?? "");
  if (calls === undefined) return c.text(`send ${SCENARIO_HEADER} naming loaded statements`, 400);
  await c.env.USER_RATE_LIMITER.limit({ key: "statement-floor" });
  const session = c.env.DB.withSession("first-unconstrained");
  for (const call of calls) await run(session, call);
  return c.json(CONSTANT_DOCUMENT);
});

export default app;

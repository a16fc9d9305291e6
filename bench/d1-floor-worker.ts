// A second reference, beside the ceiling: the bare Hono worker plus what every app request pays to its
// bindings, one call of the per-user rate limiter and one trivial D1 call (`SELECT 1`). Locally both are
// simulated in the same workerd (the rate limiter is a Durable Object writing to SQLite, D1 is
// Miniflare's simulator), and each costs far more CPU than the whole ceiling worker: this shows what
// any endpoint that makes one D1 round trip can reach here at best, so the app's own cost can be told
// apart from the simulators'.
import { Hono } from "hono";
import { CONSTANT_DOCUMENT } from "./constant-document";

const app = new Hono<{ Bindings: Cloudflare.Env }>();
app.all("*", async (c) => {
  // The app calls the per-user rate limiter once per request too.
  await c.env.USER_RATE_LIMITER.limit({ key: "d1-floor" });
  await c.env.DB.prepare("SELECT 1").raw();
  return c.json(CONSTANT_DOCUMENT);
});

export default app;

// A second reference, beside the ceiling: the bare Hono worker plus one trivial D1 call per request
// (`SELECT 1`). Locally D1 is Miniflare's simulator running in the same workerd, and one call of it
// costs far more CPU than the whole ceiling worker: this shows what any endpoint that makes one D1
// round trip can reach here at best, so the app's own cost can be told apart from the simulator's.
import { Hono } from "hono";
import { CONSTANT_DOCUMENT } from "./constant-document";

const app = new Hono<{ Bindings: Cloudflare.Env }>();
app.all("*", async (c) => {
  await c.env.DB.prepare("SELECT 1").raw();
  return c.json(CONSTANT_DOCUMENT);
});

export default app;

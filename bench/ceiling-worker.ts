// The ceiling: a bare Hono worker answering one constant JSON document, built and served exactly
// like the app (wrangler's minified dry-run bundle in the same workerd), so the gap between its
// requests/s and an endpoint's is what the app costs.
import { Hono } from "hono";
import { CONSTANT_DOCUMENT } from "./constant-document";

const app = new Hono();
app.all("*", (c) => c.json(CONSTANT_DOCUMENT));

export default app;

import { Hono } from "hono";
import { methodNotAllowed } from "hono/method-not-allowed";
import { requestId } from "hono/request-id";
import type { AppEnv } from "./env";
import { authenticate } from "./middleware/auth";
import { d1Session } from "./middleware/d1-session";
import { methodNotAllowedResponse, onError, onNotFound } from "./middleware/errors";
import { extensionRoutes } from "./routes/extensions";
import { operationRoutes } from "./routes/operations";
import { subscriptionRoutes } from "./routes/subscriptions";

const app = new Hono<AppEnv>();

app.use(requestId());
app.use(async (c, next) => {
  await next();
  // Every representation depends on Accept (negotiation may answer 406 or change the media type).
  c.header("Vary", "Accept", { append: true });
});
app.use(methodNotAllowed({ app, onMethodNotAllowed: methodNotAllowedResponse }));
app.use("/v1/*", authenticate, d1Session);

app.route("/v1/subscriptions", subscriptionRoutes);
app.route("/v1/operations", operationRoutes);
app.route("/ext", extensionRoutes);

app.notFound(onNotFound);
app.onError(onError);

export default app;

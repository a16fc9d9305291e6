import { Hono } from "hono";
import { methodNotAllowed } from "hono/method-not-allowed";
import { requestId } from "hono/request-id";
import type { AppEnv } from "./env";
import { accessLog } from "./middleware/access-log";
import { authenticate } from "./middleware/auth";
import { corsPolicy } from "./middleware/cors";
import { d1Session } from "./middleware/d1-session";
import { methodNotAllowedResponse, onError, onNotFound } from "./middleware/errors";
import { limitPerUser } from "./middleware/rate-limit";
import { securityHeaders } from "./middleware/security-headers";
import { extensionRoutes } from "./routes/extensions";
import { operationRoutes } from "./routes/operations";
import { opmlRoutes } from "./routes/opml";
import { subscriptionRoutes } from "./routes/subscriptions";

const app = new Hono<AppEnv>();

app.use(requestId(), accessLog, securityHeaders, corsPolicy);
app.use(methodNotAllowed({ app, onMethodNotAllowed: methodNotAllowedResponse }));
app.use("/v1/*", authenticate, limitPerUser, d1Session);

app.route("/v1/subscriptions.opml", opmlRoutes);
app.route("/v1/subscriptions", subscriptionRoutes);
app.route("/v1/operations", operationRoutes);
app.route("/ext", extensionRoutes);

app.notFound(onNotFound);
app.onError(onError);

export default app;

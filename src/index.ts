import { Hono } from "hono";
import type { AppEnv } from "./env";
import { authenticate } from "./middleware/auth";
import { d1Session, shardConfiguration } from "./middleware/d1-session";
import { onError, onNotFound } from "./middleware/errors";
import { limitPerUser } from "./middleware/rate-limit";
import { requestFrame } from "./middleware/request-frame";
import { loginFlowPages } from "./pages/login-flow-routes";
import { pageRoutes } from "./pages/routes";
import { accountRoutes } from "./routes/account";
import { appPasswordRoutes } from "./routes/app-passwords";
import { episodeRoutes } from "./routes/episodes";
import { extensionRoutes } from "./routes/extensions";
import { gpodderRoutes } from "./routes/gpodder";
import { nextcloudRoutes } from "./routes/nextcloud";
import { operationRoutes } from "./routes/operations";
import { opmlRoutes } from "./routes/opml";
import { statusRoutes } from "./routes/status";
import { subscriptionRoutes } from "./routes/subscriptions";
import { scheduled } from "./scheduled";

const app = new Hono<AppEnv>();

app.use(requestFrame(app));
app.use("/v1/*", shardConfiguration, authenticate, limitPerUser, d1Session);

app.route("/v1/subscriptions.opml", opmlRoutes);
app.route("/v1/subscriptions", subscriptionRoutes);
app.route("/v1/episodes", episodeRoutes);
app.route("/v1/operations", operationRoutes);
app.route("/v1/app-passwords", appPasswordRoutes);
app.route("/v1/account", accountRoutes);
app.route("/ext", extensionRoutes);
app.route("/status", statusRoutes);
// The pages for people (docs/API.md §16): the home page and the account pages, with their own sessions.
app.route("/", pageRoutes);
// The gpodder.net API (docs/API.md §14): its own authentication (app passwords), per route.
app.route("/", gpodderRoutes);
// Nextcloud's Login Flow v2 and the gpoddersync app's API (docs/API.md §17), on the gpodder.net API's data; the
// flow's grant page is one of the pages for people.
app.route("/", loginFlowPages);
app.route("/", nextcloudRoutes);

app.notFound(onNotFound);
app.onError(onError);

/** The Worker: HTTP requests, and the Cron Trigger that runs retention and the feed round (src/scheduled.ts). */
export default Object.assign(app, { scheduled });

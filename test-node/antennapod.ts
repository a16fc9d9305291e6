import { request as httpRequest } from "node:http";
import { gunzipSync } from "node:zlib";

/**
 * AntennaPod's "Nextcloud" synchronization provider, as far as a server sees it: its requests reproduced byte for
 * byte from its source (github.com/AntennaPod/AntennaPod at b7ee12c, read for docs/API.md §17):
 * - net/sync/gpoddernet/.../nextcloud/NextcloudLoginFlow.java: `POST {host}/index.php/login/v2` with an empty
 *   body, then `POST {poll.endpoint}` with `token=<T>` once a second (any status but 200 is retried) for at most
 *   5 minutes; both `RequestBody.create(<text>, MediaType.get("application/x-www-form-urlencoded"))`.
 * - .../nextcloud/NextcloudSyncService.java: `Authorization: Basic`, `Accept: application/json` on every call,
 *   only 200 accepted; uploads are JSON (`MediaType.get("application/json")`), episode actions in batches of 30,
 *   and an upload's "timestamp" is the phone's own clock (`System.currentTimeMillis() / 1000`).
 * - net/sync/service/.../SyncService.java: the order of a sync (subscriptions, then episode actions) and which
 *   timestamp becomes the next `since`.
 * - net/common/.../AntennapodHttpClient.java: one OkHttp 4.12 client with UserAgentInterceptor
 *   (`"AntennaPod/" + versionName`) and a cookie jar (CookieManager, ACCEPT_ORIGINAL_SERVER).
 * OkHttp's BridgeInterceptor adds `Content-Type` (with `; charset=utf-8` appended when the media type has no
 * charset), `Content-Length`, `Host`, `Connection: Keep-Alive`, `Accept-Encoding: gzip` (and unzips the answer)
 * and `Cookie`. Android's org.json writes `/` inside strings as `\/`.
 */

/** app/build.gradle's versionName at the commit read. */
export const ANTENNAPOD_USER_AGENT = "AntennaPod/3.12.0-beta4";
/** NextcloudSyncService.UPLOAD_BULK_SIZE. */
export const UPLOAD_BULK_SIZE = 30;
const FORM = "application/x-www-form-urlencoded; charset=utf-8";
const JSON_TYPE = "application/json; charset=utf-8";
const POLL_INTERVAL_MS = 1000;
const POLL_TIMEOUT_MS = 5 * 60_000;

export interface Exchange {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
  status: number;
  responseBody: string;
}

/** An episode action as AntennaPod queues it (EpisodeAction), written by `writeToJsonObject`. */
export interface EpisodeAction {
  podcast: string;
  episode: string;
  guid?: string;
  action: "new" | "download" | "play" | "delete";
  /** Milliseconds, by the phone's clock. */
  at: number;
  started?: number;
  position?: number;
  total?: number;
}

export interface Credentials {
  server: string;
  loginName: string;
  appPassword: string;
}

/** `yyyy-MM-dd'T'HH:mm:ss` in UTC (SimpleDateFormat in EpisodeAction.writeToJsonObject). */
function utcSeconds(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19);
}

/** Android's org.json: `/` escaped inside strings (the only place a JSON text holds one). */
function androidJson(value: unknown): string {
  return JSON.stringify(value).replaceAll("/", "\\/");
}

/** EpisodeAction.writeToJsonObject: podcast, episode, guid when known, action, timestamp, and the play fields. */
export function actionJson(action: EpisodeAction): Record<string, unknown> {
  return {
    podcast: action.podcast,
    episode: action.episode,
    ...(action.guid === undefined ? {} : { guid: action.guid }),
    action: action.action,
    timestamp: utcSeconds(action.at),
    ...(action.action === "play" ? { started: action.started, position: action.position, total: action.total } : {}),
  };
}

export class AntennaPod {
  /** Every request this phone sent, with its answer, in order. */
  readonly exchanges: Exchange[] = [];
  private readonly cookies = new Map<string, string>();
  credentials: Credentials | undefined;
  /** SynchronizationSettings: the `since` of the next sync, per kind (0: never synced). */
  lastSubscriptionSync = 0;
  lastEpisodeActionSync = 0;
  /** The phone's database, as far as sync touches it. */
  readonly subscriptions = new Set<string>();
  readonly queuedAdded: string[] = [];
  readonly queuedRemoved: string[] = [];
  queuedActions: EpisodeAction[] = [];
  /** Remote PLAY actions applied (SyncService.processEpisodeActions): the position by episode URL. */
  readonly positions = new Map<string, number>();
  /** What the last sync received: subscriptions added, and the episode actions. */
  received: { subscriptions: string[]; actions: Record<string, unknown>[] } = { subscriptions: [], actions: [] };

  private cancelled = false;

  /** `clockAheadMs`: how far the phone's clock runs ahead of the world's. */
  constructor(readonly clockAheadMs = 0) {}

  /** System.currentTimeMillis() on the phone. */
  now(): number {
    return Date.now() + this.clockAheadMs;
  }

  /** One call of the shared OkHttp client; answers the status and the (unzipped) body text. */
  private send(
    method: string,
    url: string,
    options: { headers?: Record<string, string>; body?: { type: string; text: string } } = {},
  ): Promise<Exchange> {
    const target = new URL(url);
    const body = options.body === undefined ? undefined : Buffer.from(options.body.text, "utf8");
    const headers: Record<string, string> = {
      ...options.headers,
      "User-Agent": ANTENNAPOD_USER_AGENT,
      ...(options.body === undefined ? {} : { "Content-Type": options.body.type }),
      ...(body === undefined ? {} : { "Content-Length": String(body.length) }),
      Host: target.host,
      Connection: "Keep-Alive",
      "Accept-Encoding": "gzip",
      ...(this.cookies.size > 0
        ? { Cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ") }
        : {}),
    };
    return new Promise((resolve, reject) => {
      const req = httpRequest(target, { method, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const raw = Buffer.concat(chunks);
          const text = (res.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw).toString("utf8");
          for (const line of res.headers["set-cookie"] ?? []) {
            const [pair] = line.split(";");
            const eq = pair.indexOf("=");
            if (/max-age=0/i.test(line)) this.cookies.delete(pair.slice(0, eq).trim());
            else this.cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
          }
          const exchange = {
            method,
            url,
            headers,
            body: options.body?.text ?? "",
            status: res.statusCode ?? 0,
            responseBody: text,
          };
          this.exchanges.push(exchange);
          resolve(exchange);
        });
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end(body);
    });
  }

  /** NextcloudLoginFlow.doRequest's request: a form POST. */
  private formPost(url: string, bodyContent: string): Promise<Exchange> {
    return this.send("POST", url, { body: { type: FORM, text: bodyContent } });
  }

  /** NextcloudLoginFlow.doRequest: a form POST whose answer must be exactly 200 and a JSON object. */
  private async loginFlowRequest(url: string, bodyContent: string): Promise<Record<string, unknown>> {
    const exchange = await this.formPost(url, bodyContent);
    if (exchange.status !== 200) throw new Error(`Return code ${exchange.status}`);
    return JSON.parse(exchange.responseBody) as Record<string, unknown>;
  }

  /** One poll, whatever it answers (the app would retry anything but 200). */
  pollOnce(flow: { token: string; endpoint: string }): Promise<Exchange> {
    return this.formPost(flow.endpoint, `token=${flow.token}`);
  }

  /** NextcloudLoginFlow.start: the flow, whose `login` the app opens in the system browser. */
  async startLoginFlow(host: string): Promise<{ login: string; token: string; endpoint: string }> {
    const result = await this.loginFlowRequest(`${host}/index.php/login/v2`, "");
    const poll = result.poll as { token: string; endpoint: string };
    return { login: result.login as string, token: poll.token, endpoint: poll.endpoint };
  }

  /**
   * NextcloudLoginFlow.poll: `token=<T>` once a second until a 200, for at most 5 minutes; the credentials it
   * stores (the `server` becomes the host from then on).
   */
  async pollLoginFlow(flow: { token: string; endpoint: string }): Promise<Credentials> {
    const deadline = Date.now() + POLL_TIMEOUT_MS;
    for (;;) {
      if (this.cancelled) throw new Error("cancelled");
      try {
        const result = await this.loginFlowRequest(flow.endpoint, `token=${flow.token}`);
        this.credentials = {
          server: result.server as string,
          loginName: result.loginName as string,
          appPassword: result.appPassword as string,
        };
        return this.credentials;
      } catch (error) {
        if (Date.now() + POLL_INTERVAL_MS > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
      }
    }
  }

  /** NextcloudLoginFlow.cancel: the poll stops (the person left the dialog). */
  cancel(): void {
    this.cancelled = true;
  }

  /** NextcloudSyncService.performRequest: Basic and Accept on every call; anything but 200 is an error. */
  private async call(method: string, path: string, json?: unknown): Promise<string> {
    const { server, loginName, appPassword } = this.credentials as Credentials;
    const exchange = await this.send(method, `${server}/index.php/apps/gpoddersync/${path}`, {
      headers: {
        Authorization: `Basic ${Buffer.from(`${loginName}:${appPassword}`, "latin1").toString("base64")}`,
        Accept: "application/json",
      },
      ...(json === undefined ? {} : { body: { type: JSON_TYPE, text: androidJson(json) } }),
    });
    if (exchange.status !== 200) throw new Error(`Response code: ${exchange.status}`);
    return exchange.responseBody;
  }

  /** SyncService.syncSubscriptions. */
  private async syncSubscriptions(): Promise<void> {
    const lastSync = this.lastSubscriptionSync;
    const changes = JSON.parse(await this.call("GET", `subscriptions?since=${lastSync}`)) as {
      add: string[];
      remove: string[];
      timestamp: number;
    };
    let newTimeStamp = changes.timestamp;
    this.received.subscriptions = changes.add;
    for (const url of changes.add) {
      if (url.startsWith("http") && !this.queuedRemoved.includes(url)) this.subscriptions.add(url);
    }
    for (const url of changes.remove) if (!this.queuedAdded.includes(url)) this.subscriptions.delete(url);
    const added = lastSync === 0 ? [...this.subscriptions] : [...this.queuedAdded];
    const removed = this.queuedRemoved.filter((url) => !changes.remove.includes(url));
    const toAdd = added.filter((url) => !changes.add.includes(url));
    if (toAdd.length > 0 || removed.length > 0) {
      await this.call("POST", "subscription_change/create", { add: toAdd, remove: removed });
      newTimeStamp = Math.floor(this.now() / 1000);
    }
    this.queuedAdded.length = 0;
    this.queuedRemoved.length = 0;
    this.lastSubscriptionSync = newTimeStamp;
  }

  /** SyncService.syncEpisodeActions, and NextcloudSyncService.uploadEpisodeActions' batches of 30. */
  private async syncEpisodeActions(): Promise<void> {
    const lastSync = this.lastEpisodeActionSync;
    const changes = JSON.parse(await this.call("GET", `episode_action?since=${lastSync}`)) as {
      actions: Record<string, unknown>[];
      timestamp: number;
    };
    let newTimeStamp = changes.timestamp;
    this.received.actions = changes.actions;
    for (const action of changes.actions) {
      // EpisodeActionFilter: only remote PLAY actions are applied.
      if (String(action.action).toUpperCase() === "PLAY") {
        this.positions.set(action.episode as string, action.position as number);
      }
    }
    const queued = this.queuedActions;
    if (queued.length > 0) {
      for (let i = 0; i < queued.length; i += UPLOAD_BULK_SIZE) {
        await this.call("POST", "episode_action/create", queued.slice(i, i + UPLOAD_BULK_SIZE).map(actionJson));
      }
      newTimeStamp = Math.floor(this.now() / 1000);
      this.queuedActions = [];
    }
    this.lastEpisodeActionSync = newTimeStamp;
  }

  /** SyncService.doWork for the Nextcloud provider: login() is a no-op, then subscriptions, then episode actions. */
  async sync(): Promise<void> {
    await this.syncSubscriptions();
    await this.syncEpisodeActions();
  }
}

// A real OpenID Connect provider for local development and the tests (docs/API.md §16): panva's `oidc-provider`
// (OpenID Certified), not a mock. The only thing of ours is its sign-in form, which asks for a user name alone and
// signs that name in as `sub` (so `alice` here is the user of `npm run token -- alice`), and says on the form that
// it is for development only. First-party clients get their grant without a consent screen.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { Provider } from "oidc-provider";

/** The development client of `npm run dev`: public (no secret), PKCE alone. */
export const DEV_CLIENT_ID = "podcast-sync-dev";
/** Longer than a user id may be (255), so the tests can show the worker refusing such a `sub`. */
const MAX_USER_NAME = 1000;

/** An RS256 signing key as the provider takes it (private JWK with `kid`). */
export function signingKey(kid = "dev-signing-key") {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return { ...privateKey.export({ format: "jwk" }), kid, alg: "RS256", use: "sig" };
}

const escapeHtml = (text) =>
  String(text).replace(
    /[&<>"']/g,
    (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch],
  );

function page(title, body) {
  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:2rem auto;padding:0 1rem;line-height:1.5}
.warning{background:#fff3cd;border:1px solid #e0b400;border-radius:.4rem;padding:.5rem .75rem}
label{display:block;font-weight:600;margin-top:1rem}input{font:inherit;width:100%;padding:.4rem;box-sizing:border-box}
button{font:inherit;margin-top:1rem;margin-right:.5rem;padding:.45rem 1rem}</style></head><body>${body}</body></html>`;
}

function signInForm(uid, client, problem) {
  return page(
    "Development sign-in",
    `<h1>Development sign-in</h1>
<p class="warning"><strong>For development only.</strong> This local identity provider signs in whoever types a name,
without a password. Never use it for a real service.</p>
<p>Sign in to <strong>${escapeHtml(client)}</strong>.</p>
${problem ? `<p role="alert">${escapeHtml(problem)}</p>` : ""}
<form method="post" action="/interaction/${escapeHtml(uid)}/login">
<label for="login">User name</label>
<input id="login" name="login" autocomplete="username" autofocus required maxlength="${MAX_USER_NAME}">
<button type="submit">Sign in</button>
</form>
<form method="post" action="/interaction/${escapeHtml(uid)}/abort"><button type="submit">Cancel</button></form>`,
  );
}

async function formBody(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > 16_384) throw new Error("form too large");
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
}

/**
 * The provider's state (sessions, interactions, codes, grants) in this process's memory, which is what a development
 * provider wants: a restart signs everyone out. It is oidc-provider's own quick-start adapter in all but name; given
 * by default, that one prints "you MUST change it" for every provider (seven in a test run) to a terminal where
 * nothing is wrong.
 */
function memoryAdapter() {
  const store = new Map();
  const alive = (key) => {
    const entry = store.get(key);
    if (entry && entry.expiresAt < Date.now()) store.delete(key);
    return store.get(key)?.value;
  };
  const put = (key, value, expiresIn) =>
    store.set(key, { value, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Number.POSITIVE_INFINITY });
  return class MemoryAdapter {
    constructor(model) {
      this.model = model;
    }
    key(id) {
      return `${this.model}:${id}`;
    }
    async upsert(id, payload, expiresIn) {
      put(this.key(id), payload, expiresIn);
      if (this.model === "Session") put(`sessionUid:${payload.uid}`, id, expiresIn);
      if (payload.grantId) {
        const members = alive(`grant:${payload.grantId}`) ?? new Set();
        members.add(this.key(id));
        put(`grant:${payload.grantId}`, members);
      }
      if (payload.userCode) put(`userCode:${payload.userCode}`, id, expiresIn);
    }
    async find(id) {
      return alive(this.key(id));
    }
    async findByUid(uid) {
      const id = alive(`sessionUid:${uid}`);
      return id === undefined ? undefined : this.find(id);
    }
    async findByUserCode(userCode) {
      const id = alive(`userCode:${userCode}`);
      return id === undefined ? undefined : this.find(id);
    }
    async consume(id) {
      const payload = alive(this.key(id));
      if (payload) payload.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id) {
      store.delete(this.key(id));
    }
    async revokeByGrantId(grantId) {
      for (const key of alive(`grant:${grantId}`) ?? []) store.delete(key);
      store.delete(`grant:${grantId}`);
    }
  };
}

/**
 * A provider for `issuer` and its request handler (the provider's own routes plus the sign-in form).
 * `clients`: OIDC client metadata; `keys`: signing keys (a fresh one by default); `idTokenTtl`: seconds.
 */
export function createDevProvider(issuer, { clients, keys = [signingKey()], idTokenTtl = 3600 }) {
  const provider = new Provider(issuer, {
    adapter: memoryAdapter(),
    clients,
    jwks: { keys },
    cookies: { keys: [randomBytes(32).toString("hex")] },
    claims: { openid: ["sub"], profile: ["name", "preferred_username"] },
    // The account pages read who signed in from the ID token alone: its claims go there, not only to userinfo.
    conformIdTokenClaims: false,
    findAccount: (_ctx, sub) => ({
      accountId: sub,
      claims: () => ({ sub, name: sub, preferred_username: sub }),
    }),
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    // First-party development clients: grant what they ask for, without a consent screen.
    loadExistingGrant: async (ctx) => {
      const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client.clientId,
        accountId: ctx.oidc.session.accountId,
      });
      grant.addOIDCScope("openid profile email");
      await grant.save();
      return grant;
    },
    ttl: {
      IdToken: idTokenTtl,
      AccessToken: 600,
      Interaction: 600,
      Session: 24 * 3600,
      Grant: 24 * 3600,
    },
  });
  const callback = provider.callback();
  const interaction = /^\/interaction\/([^/]+)(\/login|\/abort)?$/;

  async function handle(req, res) {
    const path = new URL(req.url, issuer).pathname;
    const match = interaction.exec(path);
    if (!match) return callback(req, res);
    try {
      const details = await provider.interactionDetails(req, res);
      const [, uid, action] = match;
      if (req.method === "GET" && action === undefined) {
        res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" });
        return res.end(signInForm(uid, details.params.client_id));
      }
      if (req.method === "POST" && action === "/login") {
        const login = (await formBody(req)).get("login")?.trim() ?? "";
        if (login === "" || login.length > MAX_USER_NAME) {
          res.writeHead(400, { "Content-Type": "text/html; charset=utf-8" });
          return res.end(
            signInForm(uid, details.params.client_id, `Type a user name of 1 to ${MAX_USER_NAME} characters.`),
          );
        }
        return await provider.interactionFinished(
          req,
          res,
          { login: { accountId: login } },
          { mergeWithLastSubmission: false },
        );
      }
      if (req.method === "POST" && action === "/abort") {
        const result = { error: "access_denied", error_description: "The person cancelled the sign-in." };
        return await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
      }
      res.writeHead(405).end();
    } catch (err) {
      res.writeHead(400, { "Content-Type": "text/html; charset=utf-8" });
      res.end(page("Sign-in error", `<h1>Sign-in error</h1><p>${escapeHtml(err.message)}</p>`));
    }
  }
  return { provider, handle };
}

/**
 * Listens on `host`:`port` (0: any free port) first, so the issuer URL is known, then serves a provider built by
 * `configure(issuer)` (which returns createDevProvider's options): the clients' redirect URIs may depend on a
 * server started in between (`setClients` swaps the provider for one with other options).
 */
export async function startDevProvider({ host = "127.0.0.1", port = 0, publicHost = host } = {}) {
  let current;
  const server = createServer((req, res) => {
    if (!current) {
      res.writeHead(503, { "Retry-After": "1" }).end("starting");
      return;
    }
    current.handle(req, res);
  });
  // Node closes a connection idle for 5 s (keepAliveTimeout); workerd, which pools its connections, can send the
  // worker's next request on one as Node closes it: that request fails ("Network connection lost") and workerd
  // prints stacks. Idle connections stay open until the worker closes them, or `close` below.
  server.keepAliveTimeout = 0;
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, resolve);
  });
  const issuer = `http://${publicHost}:${server.address().port}`;
  return {
    issuer,
    port: server.address().port,
    /** Serves a provider with these options from now on. */
    serve(options) {
      current = createDevProvider(issuer, options);
      return current.provider;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

/** The development client's metadata for these redirect URIs: a public client with PKCE. */
export function devClient(redirectUris) {
  return {
    client_id: DEV_CLIENT_ID,
    token_endpoint_auth_method: "none",
    redirect_uris: redirectUris,
    response_types: ["code"],
    grant_types: ["authorization_code"],
  };
}

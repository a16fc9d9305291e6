// The identity providers the workerd suite signs in with (docs/API.md §16), started in Node before the suite:
// the real local provider of `npm run dev` (scripts/dev-oidc-provider.mjs) on loopback ports, which workerd can
// fetch, plus the outages a provider can have. Each is `provide`d to the tests (test/env.d.ts names them).
import { createServer } from "node:http";
import {
  createDevProvider,
  DEV_CLIENT_ID,
  devClient,
  signingKey,
  startDevProvider,
} from "../scripts/dev-oidc-provider.mjs";

/** The origin the suite's requests go to (test/helpers.ts ORIGIN). */
const REDIRECT_URIS = [
  "https://api.example.test/account/callback",
  "https://pages.example.test/account/callback",
  "http://local.example.test/account/callback",
];
export const CONFIDENTIAL_CLIENT = { id: "podcast-sync-confidential", secret: "confidential-client-secret-for-tests" };

const clients = [
  devClient(REDIRECT_URIS),
  {
    client_id: CONFIDENTIAL_CLIENT.id,
    client_secret: CONFIDENTIAL_CLIENT.secret,
    token_endpoint_auth_method: "client_secret_basic",
    redirect_uris: REDIRECT_URIS,
    response_types: ["code"],
    grant_types: ["authorization_code"],
  },
];

function listen(handler) {
  const server = createServer(handler);
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

const close = (server) =>
  new Promise((resolve) => {
    server.closeAllConnections?.();
    server.close(() => resolve());
  });

export default async function setup(project) {
  const main = await startDevProvider();
  main.serve({ clients });

  // One issuer served by two providers with different keys under the same key id, one at a time: what a
  // provider whose keys were replaced (or an impostor answering for the issuer) sends.
  const providers = {};
  let serving = "own";
  const switchable = await listen((req, res) => {
    const control = /^\/__test\/keys\/(own|other)$/.exec(req.url ?? "");
    if (control) {
      serving = control[1];
      return res.writeHead(204).end();
    }
    providers[serving].handle(req, res);
  });
  const rotatingIssuer = `http://127.0.0.1:${switchable.address().port}`;
  providers.own = createDevProvider(rotatingIssuer, { clients, keys: [signingKey("k1")] });
  providers.other = createDevProvider(rotatingIssuer, { clients, keys: [signingKey("k1")] });

  // A discovery document that is not JSON, and a server that never answers.
  const notJson = await listen((_req, res) =>
    res.writeHead(200, { "Content-Type": "text/html" }).end("<h1>It works!</h1>"),
  );
  const silent = await listen(() => {});
  // A port nothing listens on (the tests imitate workerd's refusal rather than connect: account-sign-in.test.ts).
  const gone = await listen(() => {});
  const unreachable = `http://127.0.0.1:${gone.address().port}`;
  await close(gone);

  project.provide("oidc", {
    issuer: main.issuer,
    clientId: DEV_CLIENT_ID,
    confidentialClient: CONFIDENTIAL_CLIENT,
    rotatingIssuer,
    notJsonIssuer: `http://127.0.0.1:${notJson.address().port}`,
    silentIssuer: `http://127.0.0.1:${silent.address().port}`,
    unreachableIssuer: unreachable,
  });
  return async () => {
    await Promise.all([main.close(), close(switchable), close(notJson), close(silent)]);
  };
}

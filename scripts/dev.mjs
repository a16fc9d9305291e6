#!/usr/bin/env node
// `npm run dev [-- <wrangler dev options>]`: makes sure a local dev secret exists, prints a ready-to-paste
// request for the port the server will listen on, applies the local migrations (to every shard with
// `--env shards`: `npm run dev:shards`), then runs `wrangler dev` with the options given (e.g.
// `npm run dev -- --port 8791`). It also starts a local OpenID Connect provider for the account pages
// (scripts/dev-oidc-provider.mjs, on the next port) and points OIDC_ISSUER / OIDC_CLIENT_ID in .dev.vars at it,
// unless .dev.vars names a real (non-loopback) issuer.
import { spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { sign } from "hono/jwt";
import { DEV_CLIENT_ID, devClient, startDevProvider } from "./dev-oidc-provider.mjs";
import { DEV_VARS, ensureDevSecret, readDevVar, setDevVar } from "./dev-vars.mjs";

const WRANGLER = fileURLToPath(new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url));
const TSX = fileURLToPath(new URL("../node_modules/tsx/dist/cli.mjs", import.meta.url));
const MIGRATE = fileURLToPath(new URL("./migrate.ts", import.meta.url));
const DEFAULT_PORT = 8787;

/** The value of `--name value` or `--name=value` among wrangler's options, if given. */
export function optionValue(args, name) {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === name) return args[i + 1];
    if (args[i].startsWith(`${name}=`)) return args[i].slice(name.length + 1);
  }
  return undefined;
}

/** The port `wrangler dev` will serve on, given its options. */
export function devPort(args) {
  const port = Number(optionValue(args, "--port") ?? DEFAULT_PORT);
  return Number.isInteger(port) && port > 0 && port < 65536 ? port : DEFAULT_PORT;
}

/** Runs wrangler with the pinned Node (without blocking: the identity provider runs in this process); its exit status. */
function wrangler(args, env) {
  const child = spawn(process.execPath, [WRANGLER, ...args], { stdio: "inherit", env });
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
  return new Promise((resolve) => child.on("exit", (code) => resolve(code ?? 1)));
}

const LOOPBACK = /^http:\/\/(localhost|127(\.\d{1,3}){3}|\[::1\])(:\d+)?\/?$/;

/**
 * The local identity provider on the port after the worker's (any free one if that is taken), with the development
 * client for the worker's origins; undefined when .dev.vars names a real issuer, which is then left alone.
 */
async function startIdentityProvider(port) {
  const configured = readDevVar("OIDC_ISSUER");
  if (configured && !LOOPBACK.test(configured)) return undefined;
  const provider = await startDevProvider({ port: port + 1 }).catch(() => startDevProvider({ port: 0 }));
  provider.serve({
    clients: [devClient([`http://localhost:${port}/account/callback`, `http://127.0.0.1:${port}/account/callback`])],
  });
  setDevVar("OIDC_ISSUER", provider.issuer);
  setDevVar("OIDC_CLIENT_ID", DEV_CLIENT_ID);
  // The development client is public (PKCE alone): no secret. The empty line still names the secret, so the
  // bindings `wrangler dev` derives match the committed types (.env.types) and it does not warn they are stale.
  setDevVar("OIDC_CLIENT_SECRET", "");
  return provider;
}

async function main() {
  const args = process.argv.slice(2);
  const origin = `http://localhost:${devPort(args)}`;
  const { secret, created } = ensureDevSecret();
  if (created) console.log("Created .dev.vars with a random AUTH_JWT_SECRET for local development.");
  const provider = await startIdentityProvider(devPort(args));
  // Without network, wrangler's attempt to download the Request.cf sample prints stack traces; the worker
  // does not read request.cf, so the built-in placeholder is enough. An explicit setting wins.
  const env = { CLOUDFLARE_CF_FETCH_ENABLED: "false", ...process.env };
  // Every local database of the environment's bucket map (DB alone without one; docs/sharding.md).
  // DEV_STATE_DIR: another local state directory, as --persist-to (scripts/shards/wrangler.ts, localStateDir).
  const stateDir = optionValue(args, "--persist-to") === undefined ? process.env.DEV_STATE_DIR || undefined : undefined;
  if (stateDir) args.push("--persist-to", stateDir);
  const persistTo = optionValue(args, "--persist-to");
  const environment = optionValue(args, "--env");
  const migrate = [
    TSX,
    MIGRATE,
    "--local",
    ...(environment ? ["--env", environment] : []),
    ...(persistTo ? ["--persist-to", persistTo] : []),
  ];
  const migrated = spawnSync(process.execPath, migrate, { stdio: ["ignore", "ignore", "inherit"], env }).status ?? 1;
  if (migrated !== 0) process.exit(migrated);
  const now = Math.floor(Date.now() / 1000);
  const token = await sign({ sub: "dev-user", iat: now, exp: now + 24 * 3600 }, secret, "HS256");
  console.log(`
Once the server is up (${origin}), try, as user "dev-user" (token valid 24 h):

  curl -s -H 'Authorization: Bearer ${token}' ${origin}/v1/subscriptions

Another user's token: npm run token -- <userId>
${
  provider
    ? `
Account pages: ${origin}/account  (sign in with any user name, e.g. alice: the same user as npm run token -- alice)
Local identity provider (for development only): ${provider.issuer}
`
    : `
Account pages: ${origin}/account  (signing in with OIDC_ISSUER from .dev.vars)
`
}`);

  const envFile =
    process.env.DEV_VARS_FILE && !optionValue(args, "--env-file") ? ["--env-file", fileURLToPath(DEV_VARS)] : [];
  const status = await wrangler(["dev", ...envFile, ...args], env);
  await provider?.close();
  process.exit(status);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();

#!/usr/bin/env node
// First half of `npm run dev`: makes sure a local dev secret exists and prints a ready-to-paste
// request. The npm script then applies local migrations and starts `wrangler dev`.
import { sign } from "hono/jwt";
import { ensureDevSecret } from "./dev-vars.mjs";

const { secret, created } = ensureDevSecret();
if (created) console.log("Created .dev.vars with a random AUTH_JWT_SECRET for local development.");
const now = Math.floor(Date.now() / 1000);
const token = await sign({ sub: "dev-user", iat: now, exp: now + 24 * 3600 }, secret, "HS256");
console.log(`
Once the server is up (http://localhost:8787), try, as user "dev-user" (token valid 24 h):

  curl -s -H 'Authorization: Bearer ${token}' http://localhost:8787/v1/subscriptions

Another user's token: npm run token -- <userId>
`);

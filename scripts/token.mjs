#!/usr/bin/env node
// Prints a bearer token for <userId> signed with the local dev secret in .dev.vars.
// Usage: npm run token -- <userId> [--ttl <seconds>]
import { sign } from "hono/jwt";
import { readDevSecret } from "./dev-vars.mjs";

const args = process.argv.slice(2);
const ttlIndex = args.indexOf("--ttl");
const ttl = ttlIndex >= 0 ? Number(args.splice(ttlIndex, 2)[1]) : 24 * 3600;
const [userId] = args;
if (!userId || !Number.isInteger(ttl) || ttl <= 0) {
  console.error("usage: npm run token -- <userId> [--ttl <seconds>]");
  process.exit(2);
}
const secret = readDevSecret();
if (!secret) {
  console.error("No AUTH_JWT_SECRET in .dev.vars: run `npm run dev` once (it creates one).");
  process.exit(1);
}
const now = Math.floor(Date.now() / 1000);
console.log(await sign({ sub: userId, iat: now, exp: now + ttl }, secret, "HS256"));

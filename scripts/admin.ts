// Acting on one user, or looking at the databases, as an operator (docs/README-ops.md, "Running it for people").
//
//   npm run admin -- user <sub>       what is stored for the user, and where
//   npm run admin -- revoke <sub>     ends every app password and session of the user
//   npm run admin -- erase <sub>      erases the account (docs/API.md §15), as DELETE /v1/account does
//   npm run admin -- usage            per database: users, rows, URL bytes, the largest accounts
//
// Remote (Cloudflare's databases, through `wrangler d1 execute --remote`) unless --local (the state of
// `wrangler dev`). The user's database is found as the worker finds it: the bucket of the sub, the environment's
// SHARD_MAP. Writes run the worker's own db functions (src/db/account.ts, src/db/app-passwords.ts) over
// wrangler (scripts/shards/wrangler-d1.ts), print what they will do and ask first unless --yes.
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { gpodderUsername } from "../src/auth/gpodder-username";
import { eraseAccount } from "../src/db/account";
import { MAX_APP_PASSWORDS, revokeAllCredentials } from "../src/db/app-passwords";
import { DatabaseError } from "../src/db/database";
import { MAX_DEVICES } from "../src/db/devices";
import { MAX_STORED_EPISODES } from "../src/db/episodes";
import { MAX_URL_BYTES } from "../src/db/storage";
import { MAX_STORED_SUBSCRIPTIONS } from "../src/db/subscriptions";
import { formatBucketSet, parseShardMap } from "../src/shards";
import { type Account, holdsContent, holdsCredentials, readAccount, writeThenReadAccount } from "./admin/account";
import { type DatabaseUsage, readUsage } from "./admin/usage";
import { ask } from "./command-line";
import {
  declaredDatabases,
  environmentVars,
  localStateDir,
  mappedDatabases,
  TARGET_OPTIONS,
  type Target,
  type UserShardOf,
  userShardOf,
} from "./shards/wrangler";
import { closeLocalDatabases, D1CommandError, wranglerD1 } from "./shards/wrangler-d1";

/** What D1 answers for a database that never got the migrations. */
const NOT_MIGRATED = /no such table/;

function migrateHint(target: Target): string {
  return `npm run db:migrate:${target.remote ? "remote" : "local"}${target.env ? ` -- --env ${target.env}` : ""}`;
}

/** A mistake in the command line: told in one line with where to read more, exit status 2. */
class UsageError extends Error {}
/** The operator said no, or could not be asked: nothing was changed, exit status 1. */
class Refused extends Error {}

const TARGET_HELP = `Where (every command):
  --local              the local databases of \`wrangler dev\` (default: the remote ones on Cloudflare)
  --env NAME           an environment of wrangler.toml (default: the top level, production)
  --persist-to DIR     with --local: the state directory, as \`wrangler dev --persist-to\` (default .wrangler/state)
  --config FILE        the wrangler config (default wrangler.toml)`;

interface Command {
  usage: string;
  help: string;
}

const COMMANDS: Record<string, Command> = {
  user: {
    usage: "user <sub> [--json]",
    help: `Shows what is stored for the user <sub> (the token's sub): where (bucket, database), the counts against
the quotas, the URL text against the 8 MiB budget, the app passwords with their last use, the gpodder and
account-page sessions, the devices. Reads only. --json prints it as JSON.`,
  },
  revoke: {
    usage: "revoke <sub> [--yes]",
    help: `Ends every app password, gpodder session and account-page session of the user <sub>, in one batch (the
worker's revokeAllCredentials, src/db/app-passwords.ts). Apps and browsers signed in with them get 401 within
60 s (each worker isolate trusts what it verified for at most that long), and nothing they send after the
revocation is stored. The user's data stays; the user can mint new app passwords with a token. Prints what it
will do and asks first; --yes does not ask.`,
  },
  erase: {
    usage: "erase <sub> [--yes]",
    help: `Erases the account of the user <sub>, for a request made to the operator: exactly what DELETE /v1/account
does (the worker's eraseAccount, src/db/account.ts; docs/API.md §15): subscriptions, tombstones, episode
states, app passwords, gpodder and account-page sessions and devices, in one batch; only bare counters stay, so
a device holding an old sync token gets 410. Credentials stop working within 60 s. Cannot be undone (only a
backup or D1 Time Travel brings it back). Prints what it will do and asks for the sub; --yes does not ask.`,
  },
  usage: {
    usage: "usage [--top N] [--json]",
    help: `Per database of the environment (the ones its SHARD_MAP names, then the spare ones): its buckets, users
(with data, and all with a stats row, erased ones included), rows per table, URL text, its size,
and the N largest accounts (default 10) by URL text and by rows. Reads only; each run reads every user's stats
row and counts the smaller tables.`,
  },
};

function commandHelp(name: string): string {
  const command = COMMANDS[name];
  return `Usage: npm run admin -- ${command.usage} [--local] [--env NAME] [--persist-to DIR] [--config FILE]\n\n${command.help}\n\n${TARGET_HELP}\n`;
}

const GENERAL_HELP = `Usage: npm run admin -- <command> [options]

Commands:
${Object.values(COMMANDS)
  .map((command) => `  ${command.usage}`)
  .join("\n")}

npm run admin -- <command> --help tells more.

${TARGET_HELP}
`;

const options = {
  ...TARGET_OPTIONS,
  yes: { type: "boolean", default: false },
  json: { type: "boolean", default: false },
  top: { type: "string", default: "10" },
  help: { type: "boolean", default: false },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>["values"];

function parse(argv: string[]): { values: Values; positionals: string[] } {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true });
  } catch (err) {
    // node:util's parse errors are one clear sentence (an unknown option, a missing value).
    throw new UsageError((err as Error).message);
  }
}

/** A user id as the worker takes it from a token's sub: 1 to 255 characters. */
function subOf(positionals: string[], command: string): string {
  if (positionals.length < 2) throw new UsageError(`${command} needs the user's id (the token's sub).`);
  if (positionals.length > 2)
    throw new UsageError(`${command} takes one user id; got ${positionals.slice(1).join(" ")}.`);
  const sub = positionals[1];
  if (sub.length === 0 || sub.length > 255) throw new UsageError("a user id (sub) has 1 to 255 characters.");
  return sub;
}

function targetOf(values: Values): Target {
  if (values.local && values.remote) throw new UsageError("--local and --remote exclude each other.");
  if (values["persist-to"] !== undefined && !values.local) throw new UsageError("--persist-to needs --local.");
  const target: Target = {
    config: resolve(values.config),
    env: values.env,
    remote: !values.local,
    persistTo: values.local ? resolveOptional(localStateDir(values["persist-to"])) : undefined,
  };
  environmentVars(target); // a missing config or environment is told here, before anything else
  return target;
}

const resolveOptional = (path: string | undefined) => (path === undefined ? undefined : resolve(path));

function describeTarget(target: Target): string {
  return `${target.remote ? "remote" : "local"}, ${target.env ? `env ${target.env}` : "top-level environment"}`;
}

const number = (value: number) => value.toLocaleString("en-US");
const time = (ms: number | null | undefined) => (ms ? new Date(ms).toISOString() : "never");
const percent = (part: number, whole: number) => `${((100 * part) / whole).toFixed(2)} %`;

/** Goes on only when the operator gives `expected` (or --yes); Refused otherwise. */
async function confirm(values: Values, question: string, expected: (answer: string) => boolean): Promise<void> {
  if (values.yes) return;
  const answer = await ask(question);
  if (answer === undefined) {
    throw new Refused("nothing was changed: no answer could be read (stdin is closed). Run it again with --yes.");
  }
  if (!expected(answer)) throw new Refused("nothing was changed.");
}

interface Located {
  target: Target;
  sub: string;
  shard: UserShardOf;
  db: D1Database;
}

async function locate(values: Values, positionals: string[]): Promise<Located> {
  const sub = subOf(positionals, positionals[0]);
  const target = targetOf(values);
  const shard = await userShardOf(target, sub);
  return { target, sub, shard, db: wranglerD1(target, shard.binding) };
}

function whereLine({ sub, shard, target }: Located): string {
  return `user ${JSON.stringify(sub)}: bucket ${shard.bucket} in ${shard.binding} (${describeTarget(target)})${shard.frozen ? ", FROZEN for a move" : ""}`;
}

function refuseFrozen(located: Located): void {
  if (located.shard.frozen) {
    throw new Refused(
      `bucket ${located.shard.bucket} is frozen (SHARD_FROZEN): a move is copying it, and a write now would stop the move. ` +
        "Nothing was changed; run this again once the move is over.",
    );
  }
}

function printAccount(located: Located, account: Account, username: string): void {
  const stats = account.stats;
  const lines = [whereLine(located), `  gpodder username: ${username}`];
  if (!stats)
    lines.push("  nothing stored (no stats row): the user never wrote, or was erased before the counters existed");
  else {
    lines.push(
      `  subscriptions: ${number(stats.activeSubscriptions)} active, ${number(stats.storedSubscriptions)} stored with tombstones (quota ${number(MAX_STORED_SUBSCRIPTIONS)})`,
      `  episode states: ${number(stats.episodes)} stored (quota ${number(MAX_STORED_EPISODES)})`,
      `  URL text: ${number(stats.urlBytes)} bytes of ${number(MAX_URL_BYTES)} (${percent(stats.urlBytes, MAX_URL_BYTES)})`,
      `  change numbers: subscriptions ${stats.subscriptionVersion} (horizon ${stats.subscriptionHorizon}), episodes ${stats.episodeVersion} (horizon ${stats.episodeHorizon})`,
    );
  }
  lines.push(`  app passwords: ${account.appPasswords.length} of ${MAX_APP_PASSWORDS}`);
  for (const password of account.appPasswords) {
    const sessions = account.gpodderSessions.filter((session) => session.appPasswordId === password.id);
    lines.push(
      `    ${password.id}  ${JSON.stringify(password.label)}  created ${time(password.createdAt)}, last used ${time(password.lastUsedAt)}, ${sessions.length} gpodder session(s)` +
        (sessions.length > 0 ? `, the latest used ${time(Math.max(...sessions.map((s) => s.lastUsedAt)))}` : ""),
    );
  }
  lines.push(`  account-page sessions: ${account.accountSessions.length}`);
  for (const session of account.accountSessions) {
    lines.push(
      `    ${JSON.stringify(session.name)}  signed in ${time(session.createdAt)}, expires ${time(session.expiresAt)}`,
    );
  }
  lines.push(`  devices: ${account.devices.length} of ${MAX_DEVICES}`);
  for (const device of account.devices) {
    lines.push(`    ${device.id}  ${device.type}  ${JSON.stringify(device.caption)}`);
  }
  console.log(lines.join("\n"));
}

async function userCommand(values: Values, positionals: string[]): Promise<void> {
  const located = await locate(values, positionals);
  const account = await readAccount(located.db, located.sub);
  const username = await gpodderUsername(located.sub);
  if (values.json) {
    const { sub, shard } = located;
    console.log(JSON.stringify({ sub, ...shard, gpodderUsername: username, ...account }, null, 2));
  } else printAccount(located, account, username);
}

async function revokeCommand(values: Values, positionals: string[]): Promise<void> {
  const located = await locate(values, positionals);
  const account = await readAccount(located.db, located.sub);
  console.log(whereLine(located));
  if (!holdsCredentials(account)) {
    console.log("  no app password or session to revoke: nothing was changed.");
    return;
  }
  refuseFrozen(located);
  console.log(
    `  will delete ${account.appPasswords.length} app password(s), ${account.gpodderSessions.length} gpodder session(s) ` +
      `and ${account.accountSessions.length} account-page session(s); apps and browsers signed in with them get 401 ` +
      "within 60 s. Subscriptions, episode states and devices stay.",
  );
  await confirm(values, "Revoke them? [y/N] ", (answer) => /^y(es)?$/i.test(answer));
  // What was deleted is read back (in the same call) rather than taken from D1's change counts, which a local
  // `wrangler d1 execute` does not report.
  const after = await writeThenReadAccount(located.db, located.sub, (db) => revokeAllCredentials(db, located.sub));
  if (holdsCredentials(after))
    throw new Error("the revocation ran, but credentials of the user are still there: run it again.");
  console.log(
    `revoked ${account.appPasswords.length} app password(s), ${account.gpodderSessions.length} gpodder session(s), ` +
      `${account.accountSessions.length} account-page session(s). Every one stops working within 60 s, and nothing ` +
      "they send from now on is stored.",
  );
}

async function eraseCommand(values: Values, positionals: string[]): Promise<void> {
  const located = await locate(values, positionals);
  const account = await readAccount(located.db, located.sub);
  console.log(whereLine(located));
  if (!holdsContent(account)) {
    console.log("  nothing is stored for this user besides bare counters: nothing was changed.");
    return;
  }
  refuseFrozen(located);
  const stats = account.stats;
  console.log(
    `  will erase ${number(stats?.storedSubscriptions ?? 0)} subscription(s) with tombstones, ${number(stats?.episodes ?? 0)} episode state(s), ` +
      `${account.appPasswords.length} app password(s), ${account.gpodderSessions.length} gpodder session(s), ` +
      `${account.accountSessions.length} account-page session(s) and ${account.devices.length} device(s), as DELETE /v1/account does. ` +
      "Only bare counters stay (old sync tokens then get 410). This cannot be undone.",
  );
  await confirm(values, `Type the user id (${located.sub}) to erase the account: `, (answer) => answer === located.sub);
  const after = await writeThenReadAccount(located.db, located.sub, (db) => eraseAccount(db, located.sub));
  if (holdsContent(after)) throw new Error("the erasure ran, but rows of the user are still there: run it again.");
  console.log("erased: nothing of the user is stored besides bare counters. Credentials stop working within 60 s.");
}

function databasesOf(target: Target): string[] {
  return [...new Set([...mappedDatabases(target), ...declaredDatabases(target)])];
}

function printUsage(name: string, buckets: string, usage: DatabaseUsage): void {
  const t = usage.totals;
  const size = usage.sizeBytes === undefined ? "unknown" : `${number(usage.sizeBytes)} bytes`;
  const lines = [
    `${name}: buckets ${buckets || "none (spare)"}, size ${size}`,
    `  users: ${number(t.usersWithData)} with data, ${number(t.users)} with a stats row`,
    `  rows: ${number(t.subscriptions)} subscriptions (${number(t.activeSubscriptions)} active), ${number(t.episodes)} episode states, ` +
      `${number(t.urlPieces)} URL pieces, ${number(t.appPasswords)} app passwords, ${number(t.gpodderSessions)} gpodder sessions, ` +
      `${number(t.accountSessions)} account-page sessions, ${number(t.devices)} devices, ` +
      `${number(t.subscriptionRenames)} renames kept as aliases, ${number(t.episodeRehomes)} re-homed episode states waiting`,
    `  feeds: ${number(t.feeds)} known, ${number(t.feedAliases)} learned moves`,
    `  URL text: ${number(t.urlBytes)} bytes`,
  ];
  for (const [title, accounts] of [
    ["by URL text", usage.largestByBytes],
    ["by rows", usage.largestByRows],
  ] as const) {
    lines.push(`  largest accounts ${title}:`);
    for (const account of accounts) {
      lines.push(
        `    ${JSON.stringify(account.userId)}  ${number(account.urlBytes)} bytes (${percent(account.urlBytes, MAX_URL_BYTES)} of the budget), ` +
          `${number(account.storedSubscriptions)} subscriptions, ${number(account.episodes)} episode states`,
      );
    }
    if (accounts.length === 0) lines.push("    none");
  }
  console.log(lines.join("\n"));
}

async function usageCommand(values: Values, positionals: string[]): Promise<void> {
  if (positionals.length > 1) throw new UsageError(`usage takes no argument; got ${positionals.slice(1).join(" ")}.`);
  const top = Number(values.top);
  if (!Number.isInteger(top) || top < 1 || top > 1000)
    throw new UsageError("--top takes a whole number from 1 to 1000.");
  const target = targetOf(values);
  const map = environmentVars(target).SHARD_MAP;
  const owners = parseShardMap(typeof map === "string" ? map : "").owners;
  const report: Record<string, (DatabaseUsage | { notMigrated: true }) & { buckets: string }> = {};
  for (const name of databasesOf(target)) {
    const buckets = formatBucketSet(new Set(owners.flatMap((owner, bucket) => (owner === name ? [bucket] : []))));
    let usage: DatabaseUsage;
    try {
      usage = await readUsage(wranglerD1(target, name), top);
    } catch (err) {
      if (!(err instanceof D1CommandError && NOT_MIGRATED.test(err.message))) throw err;
      // A spare database nobody migrated yet holds nothing: say so and go on with the others.
      if (values.json) report[name] = { buckets, notMigrated: true };
      else console.log(`${name}: buckets ${buckets || "none (spare)"}, not migrated (${migrateHint(target)})`);
      continue;
    }
    if (values.json) report[name] = { buckets, ...usage };
    else printUsage(name, buckets, usage);
  }
  if (values.json) console.log(JSON.stringify({ target: describeTarget(target), databases: report }, null, 2));
}

const RUN: Record<string, (values: Values, positionals: string[]) => Promise<void>> = {
  user: userCommand,
  revoke: revokeCommand,
  erase: eraseCommand,
  usage: usageCommand,
};

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv);
  const name = positionals[0];
  if (name === undefined) {
    if (values.help) {
      process.stdout.write(GENERAL_HELP);
      return 0;
    }
    throw new UsageError("name a command: user, revoke, erase or usage.");
  }
  if (!Object.hasOwn(RUN, name)) throw new UsageError(`unknown command "${name}": user, revoke, erase or usage.`);
  if (values.help) {
    process.stdout.write(commandHelp(name));
    return 0;
  }
  await RUN[name](values, positionals);
  return 0;
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  if (err instanceof UsageError) {
    console.error(`admin: ${err.message}\nSee npm run admin -- --help.`);
    process.exitCode = 2;
  } else {
    // Refusals, wrangler's failures (one line each: scripts/shards/wrangler-d1.ts; the db functions wrap them in
    // a DatabaseError), a bad config: never a stack.
    const cause = err instanceof DatabaseError ? err.cause : err;
    const message = cause instanceof Error ? cause.message : String(cause);
    const hint = cause instanceof D1CommandError && NOT_MIGRATED.test(message) ? " (is the database migrated?)" : "";
    console.error(`admin: ${message}${hint}`);
    process.exitCode = 1;
  }
} finally {
  await closeLocalDatabases();
}

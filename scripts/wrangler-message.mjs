// What wrangler said when it failed, in one line, for the scripts that run it (npm run deploy's migrations, admin,
// backup, restore, db:seed, shards:move, preview): a person reads "wrangler d1 migrations apply DB failed: In a
// non-interactive environment, it's necessary to set a CLOUDFLARE_API_TOKEN ...", not wrangler's banner, its log
// file's path and a 40-line stack trace of ours (docs/README-ops.md, "Deploy to Cloudflare").
// biome-ignore lint/suspicious/noControlCharactersInRegex: the escape sequences wrangler colours its output with
const COLOUR = /\u001b\[[0-9;]*m/g;
const ERROR = /^✘ \[ERROR\]\s*/;

/** Wrangler's error line (with the API's `[code: N]` line when it gives one); else its last line of output. */
export function wranglerMessage(stdout, stderr) {
  const lines = `${stderr}\n${stdout}`
    .replace(COLOUR, "")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("🪵"));
  const error = lines.findIndex((line) => ERROR.test(line));
  if (error < 0) return lines.at(-1) ?? "it printed nothing";
  const code = lines.slice(error + 1).find((line) => /\[code: \d+\]/.test(line));
  return [lines[error].replace(ERROR, ""), code].filter(Boolean).join(" ");
}

/** The command wrangler ran, without its options (whose values may be long SQL): `wrangler d1 execute DB`. */
export function wranglerCommand(args) {
  const options = args.findIndex((arg) => arg.startsWith("-"));
  return `wrangler ${(options < 0 ? args : args.slice(0, options)).join(" ")}`;
}

/** How the pages write numbers, sizes, times and durations for people (English, UTC). */

/**
 * English number formatting, made once per isolate: `toLocaleString("en")` builds a formatter on every call (about
 * 20 µs each in workerd, the account page's most expensive line).
 */
let english: Intl.NumberFormat | undefined;

/** A number as `10,000`. */
export function number(value: number): string {
  english ??= new Intl.NumberFormat("en");
  return english.format(value);
}

export function count(value: number, one: string, many: string): string {
  return `${number(value)} ${value === 1 ? one : many}`;
}

/** Bytes in the largest binary unit that keeps a number of at least 1 (8 388 608 bytes: "8 MiB"). */
export function bytes(value: number): string {
  const units = ["bytes", "KiB", "MiB", "GiB"];
  let amount = value;
  let unit = 0;
  while (amount >= 1024 && unit < units.length - 1) {
    amount /= 1024;
    unit++;
  }
  const shown = unit === 0 || Number.isInteger(amount) ? String(amount) : amount.toFixed(1);
  return `${shown} ${units[unit]}`;
}

/** A millisecond time as `2026-01-02 03:04 UTC`. */
export function dateTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/** Seconds as `m:ss` or `h:mm:ss`. */
export function duration(seconds: number): string {
  const whole = Math.max(0, Math.floor(seconds));
  const h = Math.floor(whole / 3600);
  const m = Math.floor((whole % 3600) / 60);
  const s = String(whole % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}

/** How far `at` is from `now` (ms), in whole minutes: `just now`, `3 minutes ago`, `in 17 minutes`. */
export function minutesFrom(at: number, now: number): string {
  const minutes = Math.floor(Math.abs(now - at) / 60_000);
  if (minutes === 0) return at <= now ? "just now" : "in under a minute";
  const span = count(minutes, "minute", "minutes");
  return at <= now ? `${span} ago` : `in ${span}`;
}

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseRfc3339 } from "../src/resources/episode";
import { toRfc3339 } from "../src/timestamps";
import { propertyOptions } from "./property-options";

/** The last millisecond toISOString writes with a four-digit year. */
const YEAR_9999_END = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

describe("toRfc3339", () => {
  it("equals Date#toISOString on every millisecond from 1970 to 9999 it is tried on (100 000 seeded cases)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: YEAR_9999_END }), (ms) => {
        expect(toRfc3339(ms)).toBe(new Date(ms).toISOString());
      }),
      propertyOptions(20261123, 100_000),
    );
  });

  it("gets the edges right: epoch, leap days, century rules, month and year ends, the last ms of 9999", () => {
    const edges = [
      0,
      1,
      999,
      Date.UTC(2000, 1, 29, 12),
      Date.UTC(2100, 1, 28, 23, 59, 59, 999),
      Date.UTC(2100, 2, 1),
      Date.UTC(2024, 11, 31, 23, 59, 59, 999),
      Date.UTC(2025, 0, 1),
      Date.UTC(2026, 10, 21, 22, 44, 28, 123),
      YEAR_9999_END,
    ];
    for (const ms of edges) expect(toRfc3339(ms)).toBe(new Date(ms).toISOString());
  });

  it("answers a time asked again (the bulk case: one time for every result) as the first time, and the next one its own", () => {
    const times = [
      Date.UTC(2026, 10, 23, 7),
      Date.UTC(2026, 10, 23, 7),
      Date.UTC(2026, 10, 23, 7, 0, 0, 1),
      Date.UTC(2026, 10, 23, 7),
    ];
    expect(times.map(toRfc3339)).toEqual(times.map((ms) => new Date(ms).toISOString()));
  });
});

describe("parseRfc3339 (changedAt, docs/API.md §13)", () => {
  /** `ms` written with an offset of `minutes` east of UTC (`+hh:mm`, `-hh:mm`), to the millisecond. */
  const withOffset = (ms: number, minutes: number) => {
    const local = new Date(ms + minutes * 60_000).toISOString().slice(0, -1);
    const sign = minutes < 0 ? "-" : "+";
    const size = Math.abs(minutes);
    return `${local}${sign}${String(Math.floor(size / 60)).padStart(2, "0")}:${String(size % 60).padStart(2, "0")}`;
  };

  it("reads every time as written in UTC or with any offset (20 000 seeded cases)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(1970, 0, 2), max: Date.UTC(9999, 11, 30) }),
        fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }),
        (ms, minutes) => {
          expect(parseRfc3339(new Date(ms).toISOString())).toBe(ms);
          expect(parseRfc3339(withOffset(ms, minutes))).toBe(ms);
        },
      ),
      propertyOptions(20261125, 20_000),
    );
  });

  it("takes RFC 3339's other spellings: t, z, a space, any fraction (truncated to the ms), a leap second", () => {
    const at = Date.UTC(2024, 1, 29, 10, 0, 0);
    expect(parseRfc3339("2024-02-29t10:00:00z")).toBe(at);
    expect(parseRfc3339("2024-02-29 10:00:00Z")).toBe(at);
    expect(parseRfc3339("2024-02-29T10:00:00.5+01:30")).toBe(at + 500 - 90 * 60_000);
    expect(parseRfc3339("2024-02-29T10:00:00.123456789-12:00")).toBe(at + 123 + 12 * 3_600_000);
    expect(parseRfc3339("2024-02-29T10:00:00.0Z")).toBe(at);
    expect(parseRfc3339("2016-12-31T23:59:60Z")).toBe(Date.UTC(2017, 0, 1));
    expect(parseRfc3339("2016-12-31T23:59:60.999Z")).toBe(Date.UTC(2017, 0, 1) + 999);
  });

  it("refuses what is not an RFC 3339 date-time, and dates no calendar has", () => {
    for (const text of [
      "",
      "2026-01-01",
      "2026-01-01T00:00:00",
      "2026-01-01T00:00Z",
      "2026-01-01T00:00:00.Z",
      "2026-01-01T00:00:00+0100",
      "2026-01-01T00:00:00+01:00Z",
      "2026-01-01T00:00:00Zjunk",
      "2026-01-01T00:00:00 Z",
      "2026-01-01X00:00:00Z",
      "2026/01/01T00:00:00Z",
      "2026-1-01T00:00:00Z",
      "+02026-01-01T00:00:00Z",
      "２026-01-01T00:00:00Z",
      "2026-13-01T00:00:00Z",
      "2026-00-01T00:00:00Z",
      "2026-01-00T00:00:00Z",
      "2026-04-31T00:00:00Z",
      "2026-02-29T00:00:00Z",
      "2100-02-29T00:00:00Z",
      "2026-01-01T24:00:00Z",
      "2026-01-01T00:60:00Z",
      "2026-01-01T00:00:61Z",
      "2026-01-01T00:00:00+24:00",
      "2026-01-01T00:00:00+01:60",
      "Thu, 01 Jan 2026 00:00:00 GMT",
      "1767225600000",
    ]) {
      expect(parseRfc3339(text), text).toBeUndefined();
    }
  });
});

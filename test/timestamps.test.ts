import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { toRfc3339 } from "../src/timestamps";

/** The last millisecond toISOString writes with a four-digit year. */
const YEAR_9999_END = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

describe("toRfc3339", () => {
  it("equals Date#toISOString on every millisecond from 1970 to 9999 it is tried on (100 000 seeded cases)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: YEAR_9999_END }), (ms) => {
        expect(toRfc3339(ms)).toBe(new Date(ms).toISOString());
      }),
      { seed: 20261123, numRuns: 100_000 },
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

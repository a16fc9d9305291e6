import fc from "fast-check";
import { HonoRequest } from "hono/request";
import { describe, expect, it } from "vitest";
import { MAX_PAGE_NUMBER, pageQuerySchema, usualCollectionQuery } from "../src/pagination";
import { guidSchema, parseGuid } from "../src/resources/resource-object";
import { propertyOptions } from "./property-options";

/** Names and values near and far from the usual query: the quick path must agree with the schema on all of them. */
const knownName = fc.constantFrom(
  "page[number]",
  "page%5Bnumber%5D",
  "page%5bnumber%5d",
  "page[size]",
  "page%5Bsize%5D",
  "filter[since]",
  "filter%5Bsince%5D",
);
const otherName = fc.oneof(
  fc.constantFrom("page[cursor]", "sort", "Page[Number]", "page+[size]", "page%5Gsize", "myParam", ""),
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
);
const name = fc.oneof({ arbitrary: knownName, weight: 4 }, { arbitrary: otherName, weight: 1 });
/** Weighted to the limits: 0, 1, 100, 101, the last page number and one past it, the longest sync token. */
const value = fc.oneof(
  { arbitrary: fc.constantFrom("0", "1", "2", "25", "100", "101"), weight: 4 },
  { arbitrary: fc.constantFrom(String(MAX_PAGE_NUMBER), String(MAX_PAGE_NUMBER + 1)), weight: 2 },
  { arbitrary: fc.integer({ min: -2, max: 120 }).map(String), weight: 2 },
  {
    arbitrary: fc.constantFrom("00", "007", "1e2", "1.5", "", "+1", "%31", "1 ", "999999999999999", "1000000000000000"),
    weight: 2,
  },
  { arbitrary: fc.bigInt({ min: 0n, max: 10n ** 17n }).map(String), weight: 1 },
  { arbitrary: fc.string({ maxLength: 6 }).map(encodeURIComponent), weight: 1 },
);
const pair = fc.oneof(
  { arbitrary: fc.tuple(name, value).map(([n, v]) => `${n}=${v}`), weight: 9 },
  { arbitrary: name, weight: 1 },
);
const query = fc.oneof(
  fc.constantFrom("", "?", "?&"),
  fc.array(pair, { minLength: 1, maxLength: 3 }).map((pairs) => `?${pairs.join("&")}`),
);

/** The query as Hono's validators see it (what the route validated with zod before the quick path). */
function schemaResult(url: string) {
  const queries = new HonoRequest(new Request(url)).queries();
  const record = Object.fromEntries(
    Object.entries(queries).map(([key, values]) => [key, values.length === 1 ? values[0] : values]),
  );
  return pageQuerySchema.safeParse(record);
}

describe("collection query validation", () => {
  it("the quick path answers only what the zod schema answers for the same URL (10 000 seeded cases)", () => {
    let recognised = 0;
    fc.assert(
      fc.property(query, (search) => {
        const url = `https://api.example/v1/subscriptions${search}`;
        const ours = usualCollectionQuery(url);
        if (ours === undefined) return;
        recognised++;
        const schema = schemaResult(url);
        expect(schema.success).toBe(true);
        expect(ours).toEqual(schema.data);
      }),
      propertyOptions(20261123, 10_000),
    );
    // The comparison means something only if the quick path took a fair share of the cases.
    expect(recognised).toBeGreaterThan(2000);
  });

  it("with include (docs/API.md §18): the quick path answers only what the schema answers (5 000 seeded cases)", () => {
    const includeName = fc.constantFrom("include", "include%20", "Include", "%69nclude");
    const includeValue = fc.constantFrom(
      "podcast",
      "podcast",
      "Podcast",
      "podcast,podcast",
      "",
      "episodes",
      "%70odcast",
    );
    const includePair = fc.tuple(includeName, includeValue).map(([n, v]) => `${n}=${v}`);
    const mixed = fc
      .array(fc.oneof({ arbitrary: pair, weight: 2 }, { arbitrary: includePair, weight: 1 }), {
        minLength: 1,
        maxLength: 4,
      })
      .map((pairs) => `?${pairs.join("&")}`);
    let recognised = 0;
    let included = 0;
    fc.assert(
      fc.property(mixed, (search) => {
        const url = `https://api.example/v1/subscriptions${search}`;
        const schema = schemaResult(url);
        const ours = usualCollectionQuery(url);
        if (ours === undefined) return;
        recognised++;
        if (ours.include) included++;
        expect(schema.success).toBe(true);
        expect(ours).toEqual(schema.data);
      }),
      { seed: 20261202, numRuns: 5_000 },
    );
    expect(recognised).toBeGreaterThan(300);
    expect(included).toBeGreaterThan(100);
    const base = "https://api.example/v1/subscriptions";
    expect(usualCollectionQuery(`${base}?include=podcast`)).toEqual({
      kind: "page",
      number: 1,
      size: 25,
      include: "podcast",
    });
    expect(usualCollectionQuery(`${base}?filter[since]=3&include=podcast`)).toEqual({
      kind: "changes",
      since: 3,
      size: 25,
      include: "podcast",
    });
    for (const refused of [
      "include=Podcast",
      "include=podcast,podcast",
      "include=podcast&include=podcast",
      "include=",
    ]) {
      expect(usualCollectionQuery(`${base}?${refused}`), refused).toBeUndefined();
      expect(schemaResult(`${base}?${refused}`).success, refused).toBe(false);
    }
  });

  it("recognises the queries the API documents", () => {
    const base = "https://api.example/v1/subscriptions";
    expect(usualCollectionQuery(base)).toEqual({ kind: "page", number: 1, size: 25 });
    expect(usualCollectionQuery(`${base}?page%5Bnumber%5D=2&page%5Bsize%5D=100`)).toEqual({
      kind: "page",
      number: 2,
      size: 100,
    });
    expect(usualCollectionQuery(`${base}?filter[since]=0&page[size]=50`)).toEqual({
      kind: "changes",
      since: 0,
      size: 50,
    });
    // Errors are the schema's to word: the quick path steps aside.
    expect(usualCollectionQuery(`${base}?page[size]=101`)).toBeUndefined();
    expect(usualCollectionQuery(`${base}?filter[since]=1&page[number]=1`)).toBeUndefined();
    expect(usualCollectionQuery(`${base}?page[number]=1&page[number]=2`)).toBeUndefined();
  });
});

describe("guid validation", () => {
  it("accepts exactly what the zod schema accepts, lower-cased the same (5 000 seeded cases)", () => {
    const candidate = fc.oneof(
      fc.uuid(),
      fc.uuid().map((id) => id.toUpperCase()),
      fc.uuid().map((id) => ` ${id}`),
      fc.string({ maxLength: 40 }),
      fc.anything(),
    );
    fc.assert(
      fc.property(candidate, (input) => {
        const schema = guidSchema.safeParse(input);
        expect(parseGuid(input)).toBe(schema.success ? schema.data : undefined);
      }),
      propertyOptions(20261123, 5000),
    );
  });
});

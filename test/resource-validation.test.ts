import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseSubscriptionResource, subscriptionResourceSchema } from "../src/resources/subscription";

/** Resources near and far from valid: the validator's quick path must agree with the schema on all of them. */
const guid = fc.oneof(
  fc.uuid(),
  fc.uuid().map((id) => id.toUpperCase()),
  fc.string({ maxLength: 40 }),
  fc.constant("0e6f1c2a-1111-4222-8333-94444555566g"),
);
const feedUrl = fc.oneof(
  fc.webUrl(),
  fc.constantFrom(
    "https://a.example/f",
    "ftp://a.example/f",
    "https://",
    "/relative",
    "https://a.example/\u202e",
    "https://a.example/ x",
  ),
  fc.string({ maxLength: 30 }).map((path) => `https://a.example/${path}`),
  fc.string({ minLength: 2040, maxLength: 2060 }).map((path) => `https://a.example/${path}`),
  fc.anything(),
);
const resource = fc.oneof(
  fc.record(
    {
      type: fc.oneof(fc.constant("subscription"), fc.constant("Subscription"), fc.anything()),
      id: fc.oneof(guid, fc.anything()),
      attributes: fc.oneof(fc.record({ feedUrl }, { requiredKeys: [] }), fc.array(fc.anything()), fc.anything()),
    },
    { requiredKeys: [] },
  ),
  fc.anything(),
);

describe("subscription resource validation", () => {
  it("accepts exactly what the zod schema accepts, with the same value, and words refusals the same (5 000 seeded cases)", () => {
    fc.assert(
      fc.property(resource, (candidate) => {
        const ours = parseSubscriptionResource(candidate, "/data");
        const schema = subscriptionResourceSchema.safeParse(candidate);
        expect(ours.ok).toBe(schema.success);
        if (ours.ok && schema.success) {
          expect(ours.value).toEqual({ guid: schema.data.id, feedUrl: schema.data.attributes.feedUrl });
        }
      }),
      { seed: 20261123, numRuns: 5000 },
    );
  });
});

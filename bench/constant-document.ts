/** The constant JSON document the reference workers answer: the shape and size of a get-one response. */
export const CONSTANT_DOCUMENT = {
  jsonapi: { version: "1.1" },
  data: {
    type: "subscription",
    id: "6f1c2d3e-4a5b-5c6d-8e7f-8091a2b3c4d5",
    attributes: { feedUrl: "https://feeds.example.com/ceiling.xml", userSubscribedAt: "2026-01-01T00:00:00.000Z" },
    links: {
      self: "/v1/subscriptions/6f1c2d3e-4a5b-5c6d-8e7f-8091a2b3c4d5",
      unsubscribe: { href: "/v1/subscriptions/6f1c2d3e-4a5b-5c6d-8e7f-8091a2b3c4d5", method: "DELETE" },
    },
  },
};

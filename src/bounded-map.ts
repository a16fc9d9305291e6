/**
 * A Map that holds at most `maxEntries`, for the isolate's caches: a new key past the bound drops the oldest
 * entry, and setting a key again makes it the newest. A stream of distinct keys (users, tokens, URLs) can then
 * never grow an isolate's memory without bound.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  constructor(readonly maxEntries: number) {
    super();
  }

  override set(key: K, value: V): this {
    this.delete(key);
    if (this.size >= this.maxEntries) this.delete(this.keys().next().value as K);
    return super.set(key, value);
  }
}

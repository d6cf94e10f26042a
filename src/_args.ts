// Argument checks shared by the public functions. One message style for programmer mistakes:
// '"key" expected Uint8Array of length 32, got length=16'.

/** Throws TypeError unless `value` is a Uint8Array (a Buffer is one). */
export function bytes(name: string, value: unknown, length?: number): Uint8Array {
  if (!(value instanceof Uint8Array)) {
    throw new TypeError(`"${name}" expected Uint8Array, got ${describe(value)}`);
  }
  if (length !== undefined && value.length !== length) {
    throw new RangeError(`"${name}" expected Uint8Array of length ${length}, got length=${value.length}`);
  }
  return value;
}

/** Throws unless `value` is an integer in [min, max]. */
export function integer(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw new TypeError(`"${name}" expected an integer, got ${describe(value)}`);
  }
  if (value < min || value > max) {
    throw new RangeError(`"${name}" expected an integer in [${min}, ${max}], got ${value}`);
  }
  return value;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'Array';
  if (typeof value === 'object') return (value as object).constructor?.name ?? 'object';
  return typeof value;
}

/**
 * A copy of `value[start, end)` in a new Uint8Array. Never `value.slice()`: on a Node.js Buffer,
 * slice() returns a view, so wiping "the copy" would wipe the caller's bytes.
 */
export function copyBytes(value: Uint8Array, start = 0, end = value.length): Uint8Array {
  return new Uint8Array(value.subarray(start, end));
}

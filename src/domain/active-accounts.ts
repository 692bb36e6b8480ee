import { createHash } from 'node:crypto';

/**
 * How many distinct accounts were active, without keeping who (docs/console.md#the-overview): a
 * HyperLogLog sketch (Flajolet et al., 2007) of 2^12 one-byte registers, 4 KB per application and
 * day, whose standard error is 1.04/√4096 ≈ 1.6 %; below that, linear counting over the empty
 * registers is off by one or two up to a few hundred accounts, by about 1 % at a thousand. Sketches merge register by register, so the active accounts of a month are the
 * merge of its days', and of every application the merge of theirs (record ids are unique across
 * applications). Only hashes of record ids reach a register: no sketch names anyone.
 */
export const SKETCH_BITS = 12;
export const SKETCH_SIZE = 1 << SKETCH_BITS;

/** An empty sketch. */
export const emptySketch = (): Buffer => Buffer.alloc(SKETCH_SIZE);

/** Adds the account `accountId` to `sketch` (in place). */
export function addToSketch(sketch: Buffer, accountId: number): void {
  const digest = createHash('sha256').update(String(accountId)).digest();
  const high = digest.readUInt32BE(0);
  const low = digest.readUInt32BE(4);
  const register = high >>> (32 - SKETCH_BITS);
  // the rank: where the first 1 is in the 52 bits after the register's
  const rest = high & ((1 << (32 - SKETCH_BITS)) - 1);
  const rank = rest !== 0 ? Math.clz32(rest) - SKETCH_BITS + 1 : 32 - SKETCH_BITS + Math.clz32(low) + 1;
  if (rank > sketch[register]!) sketch[register] = rank;
}

/** `into` with every register of `other` it is below (in place); a sketch of another size is ignored. */
export function mergeSketch(into: Buffer, other: Buffer): void {
  if (other.length !== SKETCH_SIZE) return;
  for (let i = 0; i < SKETCH_SIZE; i++) if (other[i]! > into[i]!) into[i] = other[i]!;
}

/** The number of distinct accounts `sketch` holds, estimated. */
export function sketchCount(sketch: Buffer): number {
  const m = SKETCH_SIZE;
  let sum = 0;
  let zeros = 0;
  for (let i = 0; i < m; i++) {
    const r = sketch[i]!;
    sum += 2 ** -r;
    if (r === 0) zeros++;
  }
  const raw = (0.7213 / (1 + 1.079 / m)) * m * m / sum;
  // small cardinalities: linear counting over the empty registers is the better estimate
  return Math.round(raw <= 2.5 * m && zeros > 0 ? m * Math.log(m / zeros) : raw);
}

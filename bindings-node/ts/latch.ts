// CountDownLatch handle.

import { abortable, call, num, opts, reqNum } from './call.js';
import type * as N from './native.js';
import type { WaitOptions } from './types.js';

/** Opens once its count reaches zero (`client.countDownLatch(name)`). */
export class CountDownLatch {
  readonly #native: N.CountDownLatch;

  private constructor(native: N.CountDownLatch) {
    this.#native = native;
  }

  /** @internal */
  static _wrap(native: N.CountDownLatch): CountDownLatch {
    return new CountDownLatch(native);
  }

  /** The name. */
  get name(): string {
    return this.#native.name;
  }

  /** Sets the count to `count` (≥ 1) if it is zero; false while the latch is still counting. */
  trySetCount(count: number): Promise<boolean> {
    return call(async () => this.#native.trySetCount(reqNum(count, 'count')));
  }

  /** Decrements the count (never below zero); resolves to the new count. */
  countDown(): Promise<number> {
    return call(() => this.#native.countDown());
  }

  /** The current count. */
  count(): Promise<number> {
    return call(() => this.#native.count());
  }

  /** Waits until the count is zero: at most `timeoutMs` (then `Timeout`), until `signal` aborts. */
  async wait(options?: WaitOptions): Promise<void> {
    const o = opts(options, 'options');
    await abortable(o.signal, (cancel) => this.#native.wait(num(o.timeoutMs, 'timeoutMs'), cancel));
  }
}

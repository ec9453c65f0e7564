// `await using` with the package's guards and client (TypeScript ≥ 5.2 down-levels it for
// Node 20); type-checked here, and run by the behaviour suite's own `await using` tests.

import { connect } from 'baton-lock';

export async function scoped(url: string): Promise<bigint> {
  await using client = await connect(url);
  await using guard = await client.lock('orders/42').acquire({ timeoutMs: 5_000 });
  await using permit = await client.semaphore('parking', 3).acquire();
  await using all = await client.multiLock(['a', 'b']).acquire();
  return guard.token + permit.token + all.tokens[0]!;
}

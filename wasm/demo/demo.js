// The flash sale: BUYERS tasks race for STOCK items. The stock is a plain variable of the
// page (the resource the lock protects); each buyer reads it, "pays" (a short wait), then
// writes it back. Without a lock the reads interleave and the shop oversells; with a baton
// lock (on the store URL of the field) only the holder runs read-pay-write.
// The outcome of the last run is in document.body.dataset (state, outcome) for tests.
import init, { connect } from '../pkg/baton_wasm.js';

const STOCK = 3;
const BUYERS = 8;
const $ = (s) => document.querySelector(s);
const pay = () => new Promise((r) => setTimeout(r, 30 + Math.random() * 40));

async function sale(withLock) {
  const panel = $(withLock ? '#locked' : '#unlocked');
  const list = panel.querySelector('.sales');
  const verdict = panel.querySelector('.verdict');
  list.replaceChildren();
  verdict.textContent = 'running…';
  verdict.className = 'verdict';
  document.body.dataset.state = 'running';
  let stock = STOCK;
  let sold = 0;
  const tokens = [];
  const client = withLock ? await connect($('#url').value) : null;
  const name = `flash-sale/${Date.now().toString(36)}`;
  const note = (html, none = false) => {
    const li = document.createElement('li');
    li.innerHTML = html;
    if (none) li.className = 'none';
    list.append(li);
  };
  const buyer = async (i) => {
    const guard = client ? await client.lock(name).acquire({ timeoutMs: 30_000 }) : null;
    try {
      if (guard) tokens.push(String(guard.token));
      const left = stock; // read
      await pay(); // pay
      if (left > 0) {
        stock = left - 1; // write
        sold++;
        const token = guard ? ` with token <span class="token">${guard.token}</span>` : '';
        note(`buyer ${i} bought item #${STOCK - left + 1}${token}`);
      } else {
        note(`buyer ${i}: sold out${guard ? ` (token <span class="token">${guard.token}</span>)` : ''}`, true);
      }
    } finally {
      await guard?.release();
    }
  };
  try {
    await Promise.all(Array.from({ length: BUYERS }, (_, i) => buyer(i + 1)));
    const over = sold - STOCK;
    verdict.textContent = over > 0 ? `sold ${sold} of ${STOCK} items: oversold by ${over}` : `sold ${sold} of ${STOCK} items: no oversell`;
    verdict.classList.add(over > 0 ? 'bad' : 'good');
  } catch (e) {
    verdict.textContent = `failed: ${e.code ?? ''} ${e.message}`;
    verdict.classList.add('bad');
  } finally {
    await client?.close();
  }
  document.body.dataset.outcome = JSON.stringify({ stock: STOCK, buyers: BUYERS, sold, tokens });
  document.body.dataset.state = 'done';
}

await init();
$('#stock-n').textContent = STOCK;
$('#buyers-n').textContent = BUYERS;
$('#run-unlocked').addEventListener('click', () => sale(false));
$('#run-locked').addEventListener('click', () => sale(true));
document.body.dataset.state = 'ready';

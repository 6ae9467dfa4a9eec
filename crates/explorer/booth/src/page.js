// The booth page (templates/booth.html): load a voter package, read the election from this
// node, choose, encrypt and prove in this page, then audit (and start again) or cast through
// `POST /txs`, and show the node's verdict in words.
//
// Invariants: the voter's key and choice never leave the page (the only request that carries
// anything of them is the signed, encrypted ballot); every handler catches its errors and shows
// them as a message (nothing is left to the console); a made ballot is either audited (its
// randomness shown, the ballot discarded) or cast (its opening dropped), never both.

import { BoothError, bytesToHex, Election, hexToBytes } from './chain.js';
import { admit, auditRecord, checkAudit, makeBallot, readPackage, seal } from './voter.js';

/** What each rule of the chain and policy of the node means for the voter. */
const RULES = {
  'vote-double-vote': 'you have already voted in this election: a block holds your ballot, and each voter casts one',
  'app-conflict': 'you already have a ballot waiting for a block in this election: each voter casts one',
  'vote-outside-window': 'the election does not take ballots at this height: it is outside its voting window',
  'vote-bad-token': 'the registration token is not valid for your key in this election',
  'vote-election-full': 'the election already holds as many ballots as it counts',
  'vote-unknown-election': 'the chain holds no such election',
  'vote-bad-signature': "the ballot's signature does not verify",
  'vote-bad-choice-proof': 'the proof that the ballot encrypts one valid choice does not verify',
  'vote-bad-sum-proof': 'the proof that the ballot holds exactly one vote does not verify',
  'vote-malformed': 'the ballot does not decode',
  'vote-wrong-candidates': 'the ballot does not have one entry per candidate',
  'vote-bad-election': 'the election is not a valid one',
  'fee-less-full': 'the node holds as many fee-less transactions as it takes for now: cast again after the next block',
  'fee-less-group-full': "the node holds as many of this election's ballots as it takes for now: cast again after the next block",
};

/** The verdict on a refused ballot, in words. */
export function refusalWords(reason, detail) {
  const words = RULES[reason];
  if (words) return `Refused: ${words} (${reason}).`;
  return `Refused by the node: ${reason}${detail ? `: ${detail}` : ''}.`;
}

const $ = (id) => document.getElementById(id);

function say(el, text, kind) {
  el.textContent = text;
  el.className = kind ? `verdict ${kind}` : '';
}

function show(id, on = true) {
  $(id).hidden = !on;
}

/** `fetch`, with a node that cannot be reached turned into a `BoothError`. */
async function request(url, init) {
  try {
    return await fetch(url, init);
  } catch {
    throw new BoothError('the node cannot be reached: it may have stopped, or this page lost its connection; try again once it is up');
  }
}

/** The election `id` (hex) from this node: `{ election, kind, tip, id }`. */
async function loadElection(id) {
  const res = await request(`/explorer/election/${id}/descriptor`, { headers: { accept: 'application/json' } });
  let body;
  try {
    body = await res.json();
  } catch {
    throw new BoothError(`the node answered ${res.status} without a description of election ${id}`);
  }
  if (!res.ok) throw new BoothError(body.error || `the node answered ${res.status}`);
  const election = Election.decode(hexToBytes(body.encoding));
  if (bytesToHex(election.id(body.hash)) !== body.id) {
    throw new BoothError(`the node's election does not hash to its id ${body.id}`);
  }
  return { election, kind: body.hash, tip: BigInt(body.tip), id: body.id };
}

/** The booth, on the element `root`. */
export function booth(root) {
  const state = { pkg: null, e: null, made: null };
  const fixed = root.dataset.election || '';

  const fail = (el, x) => {
    if (x instanceof BoothError) say(el, x.message, 'fail');
    else say(el, `Something went wrong in this page: ${x && x.message ? x.message : x}`, 'fail');
  };

  const facts = () => {
    const { election, tip, id } = state.e;
    const status = tip < election.start ? 'upcoming' : tip <= election.end ? 'open' : 'closed';
    $('election-label').textContent = election.labelText() || 'none';
    $('election-id').textContent = id;
    const a = $('election-link');
    a.href = `/explorer/election/${id}`;
    const w = $('election-window');
    w.textContent = `heights ${election.start}–${election.end}; the chain is at ${tip}: `;
    const badge = document.createElement('span');
    badge.className = `badge ${status}`;
    badge.textContent = status;
    w.append(badge);
    $('window-note').textContent =
      status === 'open'
        ? ''
        : status === 'upcoming'
          ? 'The window has not opened: the node would refuse a ballot now (vote-outside-window).'
          : 'The window has closed: the node would refuse a ballot now (vote-outside-window).';
    $('board-link').href = `/explorer/election/${id}/ballots`;
    const box = $('candidates');
    box.replaceChildren();
    const legend = document.createElement('legend');
    legend.textContent = `Candidates (${election.candidates}): choose one`;
    box.append(legend);
    for (let j = 0; j < election.candidates; j += 1) {
      const label = document.createElement('label');
      const input = document.createElement('input');
      input.type = 'radio';
      input.name = 'choice';
      input.value = String(j);
      input.id = `choice-${j}`;
      label.append(input, ` Candidate ${j}`);
      box.append(label);
    }
  };

  const reset = () => {
    state.made = null;
    show('step-seal', false);
    $('seal-state').textContent = '';
  };

  const loadPackage = async (text, from) => {
    const out = $('package-state');
    state.pkg = null;
    reset();
    show('step-choose', false);
    say(out, `Reading ${from}…`);
    try {
      const pkg = readPackage(text);
      const id = bytesToHex(pkg.election);
      if (fixed && id !== fixed) {
        throw new BoothError(`this package is for election ${id}, and this booth is election ${fixed}'s: open the booth from that election's page`);
      }
      say(out, `Reading election ${id} from this node…`);
      const e = await loadElection(id);
      admit(e.kind, e.election, pkg);
      state.pkg = pkg;
      state.e = e;
      facts();
      show('step-choose');
      say(out, `Loaded: voter ${bytesToHex(pkg.voterKey)}, registered for this election (its token verifies).`, 'pass');
    } catch (x) {
      fail(out, x);
    }
  };

  $('package-file').addEventListener('change', async (ev) => {
    const f = ev.target.files[0];
    if (!f) return;
    if (f.size > 256 * 1024) {
      say($('package-state'), `${f.name}: ${f.size} bytes, too large for a voter package`, 'fail');
      return;
    }
    let text;
    try {
      text = await f.text();
    } catch {
      say($('package-state'), `${f.name} cannot be read`, 'fail');
      return;
    }
    await loadPackage(text, f.name);
  });
  $('package-load').addEventListener('click', () => loadPackage($('package-text').value, 'the pasted package'));

  $('encrypt').addEventListener('click', () => {
    const out = $('encrypt-state');
    reset();
    const picked = root.querySelector('input[name="choice"]:checked');
    if (!picked) {
      say(out, 'Choose a candidate first.', 'fail');
      return;
    }
    try {
      const t0 = performance.now();
      state.made = makeBallot(state.e.kind, state.e.election, state.pkg, Number(picked.value));
      const ms = performance.now() - t0;
      root.dataset.encryptMs = ms.toFixed(1);
      say(out, `Encrypted and proven in this page in ${Math.round(ms)} ms.`);
      $('sealed-choice').textContent = `Candidate ${state.made.opening.choice}`;
      $('tracker').textContent = bytesToHex(state.made.tracker);
      show('audit-out', false);
      show('step-seal');
      show('step-verdict', false);
    } catch (x) {
      fail(out, x);
    }
  });

  $('audit').addEventListener('click', () => {
    const out = $('audit-verdict');
    if (!state.made) return;
    try {
      const text = auditRecord(state.e.kind, state.e.election, state.pkg, state.made);
      // Audited: never cast. A fresh ballot is made by encrypting again.
      reset();
      $('audit-json').value = text;
      const a = $('audit-download');
      if (a.href.startsWith('blob:')) URL.revokeObjectURL(a.href);
      a.href = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
      show('audit-out');
      const choice = checkAudit(state.e.kind, state.e.election, text);
      say(
        out,
        `Audited: this page checked that the ballot's proofs verify and that each ciphertext opens, with the randomness shown, to a vote for Candidate ${choice} only. This ballot is discarded: encrypt again to make a fresh one, then cast it. Anyone can repeat the check with \`scalechain vote audit --audit FILE\` or below.`,
        'pass',
      );
    } catch (x) {
      fail(out, x);
    }
  });

  $('cast').addEventListener('click', async () => {
    const out = $('verdict');
    if (!state.made) return;
    const { kind, election, id } = state.e;
    let sealed;
    try {
      sealed = seal(kind, election, state.pkg, state.made);
    } catch (x) {
      fail(out, x);
      return;
    }
    // Sealed: the opening is gone; casting again means encrypting again.
    reset();
    show('step-verdict');
    say(out, 'Sending the ballot to the node…');
    const headers = { 'content-type': 'application/json', accept: 'application/json' };
    const token = $('api-token').value.trim();
    if (token) headers.authorization = `Bearer ${token}`;
    try {
      const res = await request('/txs', { method: 'POST', headers, body: JSON.stringify({ txs: [sealed.tx] }) });
      let body = null;
      try {
        body = await res.json();
      } catch {
        body = null;
      }
      if (res.status === 401) {
        $('node-token').open = true;
        throw new BoothError("This node takes transactions only with its API token: enter it under “This node asks for its API token”, encrypt again and cast. Nothing was counted.");
      }
      if (!res.ok || !body || !Array.isArray(body.results) || body.results.length !== 1) {
        const why = body && body.error ? `${body.error}${body.detail ? `: ${body.detail}` : ''}` : `status ${res.status}`;
        throw new BoothError(`The node did not take the ballot (${why}). Nothing was counted.`);
      }
      const v = body.results[0];
      if (v.accepted) {
        root.dataset.tracker = sealed.tracker;
        root.dataset.txid = v.txid || sealed.txid;
        say(out, 'Accepted: the node took your ballot; it is counted once a block holds it. Keep your tracker to find it on the bulletin board.', 'pass');
        const p = document.createElement('p');
        p.append('Tracker: ');
        const code = document.createElement('code');
        code.id = 'cast-tracker';
        code.textContent = sealed.tracker;
        p.append(code, ' · ');
        const board = document.createElement('a');
        board.href = `/explorer/election/${id}/ballots?tracker=${sealed.tracker}`;
        board.id = 'find-ballot';
        board.textContent = 'find it on the bulletin board';
        const tx = document.createElement('a');
        tx.href = `/explorer/tx/${v.txid || sealed.txid}`;
        tx.textContent = 'its transaction';
        p.append(board, ' · ', tx);
        out.append(p);
      } else {
        root.dataset.refused = v.reason || '';
        say(out, refusalWords(v.reason || 'refused', v.detail || ''), 'fail');
      }
    } catch (x) {
      fail(out, x);
    }
  });

  $('check-audit').addEventListener('click', async () => {
    const out = $('check-audit-state');
    try {
      const text = $('check-audit-text').value;
      let id;
      try {
        id = JSON.parse(text).election;
      } catch {
        throw new BoothError('ballot audit: not JSON (paste the audit the booth showed)');
      }
      if (typeof id !== 'string' || !/^[0-9a-f]{64}$/.test(id)) throw new BoothError('ballot audit: "election" is not an election id');
      const e = state.e && state.e.id === id ? state.e : await loadElection(id);
      const choice = checkAudit(e.kind, e.election, text);
      say(out, `Checked: the audited ballot's proofs verify, and it encrypts a vote for Candidate ${choice} only.`, 'pass');
    } catch (x) {
      fail(out, x);
    }
  });

  if (fixed) {
    loadElection(fixed)
      .then((e) => {
        $('booth-election').textContent = `${e.election.labelText() || 'election'} (${e.election.candidates} candidates, heights ${e.election.start}–${e.election.end})`;
      })
      .catch((x) => fail($('package-state'), x));
  }
}

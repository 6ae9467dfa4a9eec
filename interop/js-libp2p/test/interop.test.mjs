// Interop test: a js-libp2p gossipsub peer (peer.mjs) against a real ScaleChain node.
//   SCALECHAIN_BIN=path/to/scalechain node --test test/
// For each case a fresh miner (devnet, sha256/ed25519) is started in a temporary data dir; the peer
// dials it, must see the node's subscriptions to §13's three topics (and be grafted), receive
// blocks by gossip whose header hash is the one the node's API reports, and publish a transaction
// batch that the node admits and mines (GET /txs/{txid} confirmed), the block carrying it coming
// back to the peer by gossip.
// The transaction is PROTOCOL.md Appendix A.2's (premine output 0, devnet key 0), valid on a new
// devnet chain; SCALECHAIN_TX_HEX / SCALECHAIN_TXID replace it.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync, rmSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const BIN = process.env.SCALECHAIN_BIN ?? join(here, '..', 'scalechain')
const PEER = join(here, '..', 'peer.mjs')
const TX = process.env.SCALECHAIN_TX_HEX ?? (
  '0100000001010000003ddf08f9e87fbe1320b645e964d6977f308283aa5f119890d36641f8b0d6308700000000' +
  '0021222a14b9d9dc75425dabf06dc67d83a7436cb6a8e8a48550df3ce6b00cf308' +
  '50d3a08c0c17ac5f85ba51d7ecfcefb44b46df98aec5a22d1387ac99c78c10ff00f52a5417f8bee67a9abfbb23f7396f44f94c23c955716a14e80f115050330d' +
  '0100000018c69a3b00000000003cada8e9e6d50c988add0ceed10b22e58959daf014347312ddb8149ed14bfb7800000000')
const TXID = process.env.SCALECHAIN_TXID ?? '2025f5c5419ea3b963f9c2892260005f0bcb7b3b75a68be14676459802b05110'
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

async function startNode (t, configToml) {
  const dir = mkdtempSync(join(tmpdir(), 'jspeer-node-'))
  const args = ['node', '--role', 'miner', '--miner-threads', '1', '--data-dir', dir,
    '--listen', '/ip4/127.0.0.1/tcp/0', '--api', '127.0.0.1:0']
  if (configToml) {
    writeFileSync(join(dir, 'test.toml'), configToml)
    args.push('--config', join(dir, 'test.toml'))
  }
  const child = spawn(BIN, args, { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-20000) })
  t.after(async () => {
    child.kill('SIGTERM')
    await Promise.race([new Promise((resolve) => child.once('exit', resolve)), sleep(5000)])
    if (child.exitCode == null) child.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })
  const info = join(dir, 'node.json')
  for (let i = 0; i < 200 && !existsSync(info); i++) await sleep(50)
  assert.ok(existsSync(info), `node.json not written; node stderr:\n${stderr}`)
  const node = JSON.parse(readFileSync(info, 'utf8'))
  const api = `http://${node.api}`
  for (let i = 0; i < 100; i++) { // wait for the first mined block
    const s = await fetch(`${api}/status`).then((r) => r.json()).catch(() => null)
    if (s && s.height >= 1) break
    await sleep(100)
  }
  return { addr: node.p2p[0], api, peerId: node.peer_id, stderr: () => stderr }
}

function runPeer (args, seconds) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PEER, ...args, '--json', '--seconds', String(seconds)], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''; let err = ''
    child.stdout.on('data', (d) => { out += d })
    child.stderr.on('data', (d) => { err += d })
    const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 20) * 1000)
    child.on('exit', (code) => {
      clearTimeout(timer)
      const events = out.split('\n').filter(Boolean).map((l) => JSON.parse(l))
      if (code !== 0) reject(new Error(`peer exited ${code}: ${err}\n${out}`))
      else resolve(events)
    })
  })
}

async function interop (t, { configToml, blockTopic, watch }) {
  const node = await startNode(t, configToml)
  const events = await runPeer([node.addr, '--publish-tx', TX, '--watch', watch], 10)
  const of = (name) => events.filter((e) => e.event === name)

  // The node's subscriptions reached the peer, and the node grafted it on every topic.
  const subs = of('subscription').filter((e) => e.peer === node.peerId && e.subscribe).map((e) => e.topic)
  for (const k of ['txs', 'blocks', 'cblocks']) {
    assert.ok(subs.some((s) => s.endsWith(`/${k}/1`)), `no subscription to ${k} from the node: ${JSON.stringify(subs)}`)
  }
  assert.equal(of('hello-response')[0]?.role, 'miner')
  const summary = of('summary')[0]
  assert.deepEqual(summary.mesh, { txs: 1, blocks: 1, cblocks: 1 })

  // Blocks by gossip: the header hash is the node's block at that height.
  const blocks = of('gossip').filter((e) => e.topic === blockTopic)
  assert.ok(blocks.length >= 3, `only ${blocks.length} ${blockTopic} messages`)
  for (const b of blocks.slice(0, 3)) {
    const apiBlock = await fetch(`${node.api}/blocks/${b.height}`).then((r) => r.json())
    assert.equal(b.hash, apiBlock.hash, `block ${b.height}`)
  }

  // The transaction went out by gossip to the node, which admitted and mined it...
  const pub = of('published')[0]
  assert.ok(pub?.recipients.includes(node.peerId), `not published to the node: ${JSON.stringify(of('published'))}`)
  let tx
  for (let i = 0; i < 100; i++) {
    tx = await fetch(`${node.api}/txs/${TXID}`).then((r) => r.ok ? r.json() : null)
    if (tx?.status === 'confirmed') break
    await sleep(100)
  }
  assert.equal(tx?.status, 'confirmed', `tx not mined: ${JSON.stringify(tx)}`)
  // ...and the block carrying it came back by gossip.
  assert.ok(blocks.some((b) => b.watched && b.height === tx.height), `no gossiped block carried the tx (height ${tx.height})`)
}

test('js-libp2p peer: compact blocks (default config), a transaction by gossip mined', async (t) => {
  await interop(t, { configToml: null, blockTopic: 'cblocks', watch: TXID })
})

test('js-libp2p peer: whole blocks (p2p.compact_blocks = false), a transaction by gossip mined', async (t) => {
  await interop(t, { configToml: '[p2p]\ncompact_blocks = false\n', blockTopic: 'blocks', watch: TX })
})

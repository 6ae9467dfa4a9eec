// js-libp2p 3.x targets Node.js >= 22; Node.js 20 lacks Promise.withResolvers (ES2024).
if (typeof Promise.withResolvers !== 'function') {
  Promise.withResolvers = function () {
    let resolve, reject
    const promise = new this((res, rej) => { resolve = res; reject = rej })
    return { promise, resolve, reject }
  }
}

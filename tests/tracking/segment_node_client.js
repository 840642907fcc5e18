// Sends a mixed batch of every Segment call with @segment/analytics-node, as a Node app
// would: argv[2] the service's URL, argv[3] the write key, argv[4] how many times to send
// the same messages (same messageIds) with a fresh client. Exits non-zero on any error.
const { Analytics } = require('@segment/analytics-node')

const [host, writeKey, rounds] = process.argv.slice(2)

async function send() {
  const analytics = new Analytics({ writeKey, host, flushAt: 50, maxRetries: 0 })
  const errors = []
  analytics.on('error', (error) => errors.push(error))
  analytics.identify({ userId: 'node-u', traits: { email: 'node@example.com', plan: 'pro' }, messageId: 'node-1' })
  analytics.track({ userId: 'node-u', event: 'Order Completed', properties: { total: 5 }, messageId: 'node-2' })
  analytics.page({ userId: 'node-u', name: 'Pricing', properties: { path: '/pricing' }, messageId: 'node-3' })
  analytics.screen({ userId: 'node-u', name: 'Home', messageId: 'node-4' })
  analytics.group({ userId: 'node-u', groupId: 'Node Co', traits: { seats: 3 }, messageId: 'node-5' })
  analytics.alias({ previousId: 'node-u', userId: 'node-u2', messageId: 'node-6' })
  analytics.track({ anonymousId: 'node-anon', event: 'Viewed', messageId: 'node-7' })
  await analytics.closeAndFlush()
  if (errors.length) {
    console.error(JSON.stringify(errors.map(String)))
    process.exit(1)
  }
}

(async () => {
  for (let i = 0; i < Number(rounds); i++) await send()
})()

/** me-crowd whose refused arrivals wait out the Retry-After, then try again (me-crowd-retrying.ts). */
import { retryingMeCrowd } from './me-crowd-retrying.js'

export default retryingMeCrowd('polite')

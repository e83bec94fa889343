/** me-crowd whose refused arrivals try again at once (me-crowd-retrying.ts). */
import { retryingMeCrowd } from './me-crowd-retrying.js'

export default retryingMeCrowd('naive')

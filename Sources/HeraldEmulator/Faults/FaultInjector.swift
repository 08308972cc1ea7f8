import Foundation
import HeraldCore
import Synchronization

/// Decides, request by request, which fault (if any) to inject, from a seeded generator.
final class FaultInjector: Sendable {
    enum Decision: Equatable {
        case none
        case status(APNSReason)
        case reset
        case noResponse
        case refuseStream
        case goAway
    }

    private struct State {
        var configuration: FaultConfiguration
        var random: SeededRandomNumberGenerator
    }

    private let state: Mutex<State>

    init(configuration: FaultConfiguration, seed: UInt64) {
        state = Mutex(State(configuration: configuration, random: SeededRandomNumberGenerator(seed: seed)))
    }

    var configuration: FaultConfiguration {
        get { state.withLock { $0.configuration } }
    }

    func update(_ configuration: FaultConfiguration) {
        state.withLock { $0.configuration = configuration }
    }

    /// Whether any fault or latency is configured: lets the hot path skip the lock when there is none.
    var isQuiet: Bool {
        state.withLock { state in
            let c = state.configuration
            return c.tooManyRequests == 0 && c.internalServerError == 0 && c.serviceUnavailable == 0 && c.shutdown == 0
                && c.goAwayProbability == 0 && c.resetProbability == 0 && c.noResponseProbability == 0
                && c.refusedStreamProbability == 0
                && c.latency == .none && c.goAwayAfterStreams == nil && c.closeAfterStreams == nil
        }
    }

    /// The fault for one valid request, and the latency to add before answering.
    func decide() -> (Decision, delayMilliseconds: Double) {
        state.withLock { state in
            let c = state.configuration
            var decision = Decision.none
            let roll = state.random.unit()
            var threshold = 0.0
            for (fraction, outcome) in [
                (c.resetProbability, Decision.reset), (c.noResponseProbability, .noResponse),
                (c.refusedStreamProbability, .refuseStream),
                (c.tooManyRequests, .status(.tooManyRequests)), (c.internalServerError, .status(.internalServerError)),
                (c.serviceUnavailable, .status(.serviceUnavailable)), (c.shutdown, .status(.shutdown)),
            ] where fraction > 0 {
                threshold += fraction
                if roll < threshold {
                    decision = outcome
                    break
                }
            }
            if decision == .none, c.goAwayProbability > 0, state.random.unit() < c.goAwayProbability {
                decision = .goAway
            }
            let delay: Double
            switch c.latency {
            case .none: delay = 0
            case .fixed(let ms): delay = ms
            case .uniform(let low, let high): delay = low + (high - low) * state.random.unit()
            case .normal(let mean, let deviation):
                // Box–Muller; clamp at zero since a response cannot come back before it was asked.
                let u1 = max(state.random.unit(), .leastNonzeroMagnitude)
                let u2 = state.random.unit()
                delay = max(0, mean + deviation * (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2))
            }
            return (decision, delay)
        }
    }
}

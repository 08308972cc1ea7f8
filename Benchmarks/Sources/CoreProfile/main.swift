import CoreFixtures
import Foundation
import HeraldCore
import HeraldTesting

// Runs one hot path N times with nothing else around it, for callgrind (see docs/benchmarks.md, "Profiling"):
//   CoreProfile encode|decode|hit|token64|token200 <count>

@inline(never) func sink<T>(_ value: T) { withExtendedLifetime(value) {} }

let arguments = CommandLine.arguments
guard arguments.count == 3, let count = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: CoreProfile encode|decode|hit|token64|token200 <count>\n".utf8))
    exit(2)
}
switch arguments[1] {
case "encode":
    let notification = PushNotification(CoreFixtures.payload, topic: CoreFixtures.topic, priority: .immediate)
    for _ in 0..<count { sink(try notification.prepare()) }
case "decode":
    let notification = PushNotification(
        body: .raw(CoreFixtures.payload.jsonBytes()), pushType: .alert, topic: CoreFixtures.topic, priority: .immediate)
    for _ in 0..<count { sink(try notification.prepare()) }
case "hit":
    let cache = ProviderTokenCache(key: TestSigningKeys.make())
    for _ in 0..<count { sink(cache.currentToken()) }
case "token64":
    for _ in 0..<count { sink(try DeviceToken(hex: CoreFixtures.shortTokenHex)) }
case "token200":
    for _ in 0..<count { sink(try DeviceToken(hex: CoreFixtures.longTokenHex)) }
default:
    FileHandle.standardError.write(Data("unknown operation \(arguments[1])\n".utf8))
    exit(2)
}

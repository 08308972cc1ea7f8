import Foundation
import HeraldServer
import HeraldTesting
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// A Herald server run in its own service group, so a test can trigger its graceful shutdown and see it end.
struct LiveServer {
    let application: HeraldApplication
    let port: Int
    let group: ServiceGroup
    /// Reaches 1 when the service group has ended.
    let ended: CountSignal

    /// Triggers the graceful shutdown and returns once every service has ended.
    func shutdown() async {
        await group.triggerGracefulShutdown()
        await ended.wait(untilAtLeast: 1)
    }

    /// Builds and starts a server on a fresh database; runs `body` while it listens; `body` decides when to shut it
    /// down with `group.triggerGracefulShutdown()`. Returns once the service group has ended.
    static func run(
        _ backend: Backend = .sqlite, logger: Logger? = nil,
        configure: (inout HeraldServer.ServerConfiguration) -> Void = { _ in },
        _ body: @escaping @Sendable (LiveServer, TestDatabase) async throws -> Void
    ) async throws {
        let database = try TestDatabase.make(backend)
        do {
            try await run(database: database, logger: logger, configure: configure, body)
        } catch {
            await database.cleanup()
            throw error
        }
        await database.cleanup()
    }

    private static func run(
        database: TestDatabase, logger: Logger?, configure: (inout HeraldServer.ServerConfiguration) -> Void,
        _ body: @escaping @Sendable (LiveServer, TestDatabase) async throws -> Void
    ) async throws {
        let application = try await ServerHarness.build(
            databaseURL: database.url, logger: logger, configure: configure)
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let reporting = PortReporting(base: application, report: { portContinuation.yield($0) })
        let group = ServiceGroup(
            configuration: .init(services: [reporting], gracefulShutdownSignals: [], logger: application.logger))
        let ended = CountSignal()
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                defer { ended.update(1) }
                try await group.run()
            }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { return }
            do {
                try await body(LiveServer(application: application, port: port, group: group, ended: ended), database)
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}

/// A Herald application that reports its port once it listens.
private struct PortReporting: ApplicationProtocol {
    typealias Responder = HeraldApplication.Responder

    let base: HeraldApplication
    let report: @Sendable (Int) -> Void

    var responder: Responder { get async throws { try await base.responder } }
    var server: HTTPServerBuilder { base.server }
    var configuration: ApplicationConfiguration { base.configuration }
    var logger: Logger { base.logger }
    var services: [any Service] { base.services }
    var processesRunBeforeServerStart: [@Sendable () async throws -> Void] { base.processesRunBeforeServerStart }
    var eventLoopGroup: any EventLoopGroup { base.eventLoopGroup }

    func onServerRunning(_ channel: any Channel) async {
        await base.onServerRunning(channel)
        if let port = channel.localAddress?.port { report(port) }
    }
}

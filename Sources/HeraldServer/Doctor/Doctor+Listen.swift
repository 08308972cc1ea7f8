import Foundation
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension Doctor {
    /// Binds the listen address as the server would, then lets it go at once.
    func listenCheck() async -> DeploymentCheck {
        let listen = configuration.listen
        let name = "listen"
        if listen.port == 0 {
            return DeploymentCheck(name, .ok, "\(listen): port 0, so herald serve picks a free port at start.")
        }
        do {
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: listen.host, port: listen.port).get()
            try await channel.close()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            return DeploymentCheck(
                name, .warning,
                "Something already listens on \(listen): a running herald serve, or another program. A second herald serve here fails to start (address already in use): give it another HERALD_LISTEN."
            )
        } catch let error as IOError where error.errnoCode == EACCES {
            return DeploymentCheck(
                name, .failure,
                "\(listen) cannot be bound: permission denied. Ports below 1024 need CAP_NET_BIND_SERVICE: listen on 8080 behind a proxy, or grant the capability."
            )
        } catch let error as IOError where error.errnoCode == EADDRNOTAVAIL {
            return DeploymentCheck(
                name, .failure,
                "\(listen) cannot be bound: no interface of this machine has the address \(listen.host). Use 127.0.0.1 (this machine only) or 0.0.0.0 (every interface, as in a container)."
            )
        } catch {
            return DeploymentCheck(
                name, .failure,
                "\(listen) cannot be bound (\(error)): write HERALD_LISTEN as an address of this machine and a port, such as 127.0.0.1:8080."
            )
        }
        return DeploymentCheck(name, .ok, "\(listen) is free: bound for a moment and let go.")
    }
}

import Foundation
import TLS

/// Reads the certificate and key files into a `TLSContext`. Used at start-up (a failure stops the
/// server) and on `SIGHUP` (a failure keeps the context in use and is logged).
struct TLSMaterial: Sendable {
    let certificatePath: String
    let keyPath: String

    /// Why the files could not be used: the path and the reason.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The context built from the files as they are now.
    func load() throws(Failure) -> (context: TLSContext, certificatePEM: [UInt8], keyPEM: [UInt8]) {
        let certificatePEM = try read(certificatePath)
        let keyPEM = try read(keyPath)
        do {
            return (try TLSContext(certificateChainPEM: certificatePEM, privateKeyPEM: keyPEM), certificatePEM, keyPEM)
        } catch {
            throw Failure(description: "\(certificatePath) + \(keyPath): \(error)")
        }
    }

    private func read(_ path: String) throws(Failure) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw Failure(description: "\(path): cannot open") }
        defer { try? handle.close() }
        do {
            let data = try handle.read(upToCount: TLSContext.maxPEMBytes + 1) ?? Data()
            guard data.count <= TLSContext.maxPEMBytes else { throw Failure(description: "\(path): over 1 MiB") }
            return Array(data)
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(description: "\(path): \(error)")
        }
    }
}

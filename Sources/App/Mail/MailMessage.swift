import Domain
import Foundation
import Hashing
import Wire

/// Renders a queued mail as an RFC 5322 message (sans-I/O: the date and id are arguments). Plain
/// text only: `text/plain; charset=utf-8`, `7bit` when the body is ASCII (RFC 5322 lines ≤ 998
/// octets: every link fits), else `base64`. The subject is fixed ASCII per kind; no header carries
/// text a user chose, so nothing can inject a header.
enum MailMessage {
    /// The message bytes, lines ending in CRLF.
    static func render(_ mail: MailContent, from: String, dateSeconds: Int, messageID: String) -> [UInt8] {
        let body = mail.body.replacingOccurrences(of: "\r\n", with: "\n")
        let ascii = body.utf8.allSatisfy { $0 < 0x80 }
        let date = HTTPDate.format(epochSeconds: dateSeconds).replacingOccurrences(of: " GMT", with: " +0000")
        var lines = [
            "Date: \(date)",
            "From: Chronir <\(from)>",
            "To: <\(mail.recipient)>",
            "Subject: \(mail.subject)",
            "Message-ID: <\(messageID)>",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: \(ascii ? "7bit" : "base64")",
            "Auto-Submitted: auto-generated",
            "",
        ]
        if ascii {
            lines += body.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        } else {
            let encoded = Data(body.utf8).base64EncodedString()
            var index = encoded.startIndex
            while index < encoded.endIndex {
                let end = encoded.index(index, offsetBy: 76, limitedBy: encoded.endIndex) ?? encoded.endIndex
                lines.append(String(encoded[index..<end]))
                index = end
            }
        }
        return Array(lines.joined(separator: "\r\n").utf8) + [0x0D, 0x0A]
    }

    /// A Message-ID for outbox row `id`: random, at the sender's domain.
    static func messageID(from: String) -> String {
        let domain = from.split(separator: "@").last.map(String.init) ?? "localhost"
        return Hex.encode(SecureRandom.bytes(16)) + "@" + domain
    }
}

import Domain
import Testing

@Suite("Invite codes — alphabet, generation, normalisation, keyed hash")
struct InviteCodeDomainTests {
    @Test("the alphabet has 31 symbols and no look-alikes")
    func alphabet() {
        #expect(InviteCode.alphabet.count == 31)
        #expect(Set(InviteCode.alphabet).count == 31)
        for excluded in "01ILO".utf8 { #expect(!InviteCode.alphabet.contains(excluded)) }
    }

    @Test("a sealed copy reads back only with the same secret and group; two seals of one code differ")
    func sealed() throws {
        let code = InviteCode.generate()
        let secret = [UInt8](repeating: 7, count: 32)
        let sealed = code.sealed(groupID: "g1", secret: secret)
        #expect(sealed.count == 12 + 6 + 16)
        #expect(InviteCode(unsealing: sealed, groupID: "g1", secret: secret) == code)
        #expect(InviteCode(unsealing: sealed, groupID: "g2", secret: secret) == nil)
        #expect(InviteCode(unsealing: sealed, groupID: "g1", secret: [UInt8](repeating: 8, count: 32)) == nil)
        var damaged = sealed
        damaged[14] ^= 1
        #expect(InviteCode(unsealing: damaged, groupID: "g1", secret: secret) == nil)
        #expect(InviteCode(unsealing: [], groupID: "g1", secret: secret) == nil)
        #expect(code.sealed(groupID: "g1", secret: secret) != sealed, "a fresh nonce each time")
    }

    @Test("generated codes are 6 alphabet symbols, and every symbol turns up")
    func generation() {
        var seen = Set<UInt8>()
        var codes = Set<String>()
        for _ in 0..<2000 {
            let code = InviteCode.generate()
            #expect(code.text.utf8.count == 6)
            #expect(code.text.utf8.allSatisfy { InviteCode.alphabet.contains($0) })
            seen.formUnion(code.text.utf8)
            codes.insert(code.text)
        }
        #expect(seen.count == 31)
        #expect(codes.count > 1990)
    }

    @Test(
        "normalisation: case, spaces, dashes; anything else is not a code",
        arguments: [
            ("abc-d23", "ABCD23"), (" AB CD 23 ", "ABCD23"), ("ab-cd-23", "ABCD23"), ("ABCD23", "ABCD23"),
        ])
    func normalises(input: String, expected: String) {
        #expect(InviteCode(normalizing: input)?.text == expected)
    }

    @Test("invalid input", arguments: ["", "ABCD2", "ABCD234", "ABCD2O", "ABCD21", "ABCD2I", "ABCD2L", "ABCD2é", "ABC_23"])
    func rejects(input: String) {
        #expect(InviteCode(normalizing: input) == nil)
    }

    @Test("the stored hash is HMAC-SHA-256 under the secret: same code same hash, other secret other hash")
    func keyedHash() throws {
        let code = try #require(InviteCode(normalizing: "abcd23"))
        let again = try #require(InviteCode(normalizing: "AB-CD-23"))
        let a = code.hash(secret: Array(repeating: 1, count: 32))
        #expect(a.count == 32)
        #expect(a == again.hash(secret: Array(repeating: 1, count: 32)))
        #expect(a != code.hash(secret: Array(repeating: 2, count: 32)))
    }

    @Test("an invitation past its expiry reads as expired")
    func invitationExpiry() {
        let invitation = Invitation(
            id: "i", groupID: "g", groupName: "G", invitedBy: "u", invitedByName: "U", inviteeEmail: nil, method: .link,
            role: .member, status: .pending, acceptedBy: nil, createdAt: Timestamp(milliseconds: 0),
            expiresAt: Timestamp(milliseconds: Invitation.lifetimeMilliseconds), respondedAt: nil)
        #expect(invitation.effectiveStatus(at: Invitation.lifetimeMilliseconds - 1) == .pending)
        #expect(invitation.effectiveStatus(at: Invitation.lifetimeMilliseconds) == .expired)
    }
}

import Domain
import Foundation
import Testing

@testable import App

/// Stored notifications carry facts, not words: `NotificationText` words them when they are sent.
@Suite("Notification text — facts stored, words at send time")
struct NotificationTextTests {
    @Test("what is stored names the message and its facts, in no language; sending words it")
    func storedWithoutWords() throws {
        let content = NotificationContent.make(
            .groupMemberJoined, groupID: "g", title: "Household", message: NotificationMessage(.memberJoined, ["member": "Nia"]))
        let stored = String(decoding: DocumentCoding.encode(content), as: UTF8.self)
        #expect(!stored.contains("Nia joined") && !stored.contains("\"body\""))
        #expect(stored.contains(#""message":"member_joined""#) && stored.contains(#""member":"Nia""#))
        // Read back the fast way and the Foundation way alike.
        let flat = try #require(FlatJSONReader.notificationContent(Array(stored.utf8)))
        #expect(flat == content)
        #expect(try JSONDecoder().decode(NotificationContent.self, from: Data(stored.utf8)) == content)
        #expect(NotificationText.words(content) == ("Household", "Nia joined"))
    }

    @Test("a row queued before messages had keys is sent with its stored words")
    func legacyRow() throws {
        let stored = #"{"title":"Feed the cat","body":"M0 completed it · Household","data":{"type":"shared_completion"}}"#
        let flat = try #require(FlatJSONReader.notificationContent(Array(stored.utf8)))
        #expect(try JSONDecoder().decode(NotificationContent.self, from: Data(stored.utf8)) == flat)
        #expect(NotificationText.words(flat) == ("Feed the cat", "M0 completed it · Household"))
    }

    @Test("plan messages word their own title; bodies are cut to the limit; an unknown key shows its facts")
    func titlesLimitsUnknown() {
        let plan = NotificationContent.make(
            .entitlementChanged, groupID: nil, title: "", message: NotificationMessage(.planActive, ["tier": "premium"]))
        #expect(NotificationText.words(plan) == ("Chronir Premium is active", "Thank you for subscribing."))
        let long = NotificationContent(title: "t", body: String(repeating: "x", count: 1_000), data: [:])
        #expect(NotificationText.body(long).count == NotificationContent.maxBodyCharacters)
        let newer = NotificationContent(
            title: "t", message: NotificationMessage(.init(rawValue: "from_a_newer_server"), ["b": "2", "a": "1"]), data: [:])
        #expect(NotificationText.body(newer) == "a: 1, b: 2")
    }
}

/// The `code` of an `error` message: why the server refused a client message or ended a
/// subscription (docs/realtime-protocol.md#errors). Each refusal of a client message counts towards
/// `RealtimeLimits.maxProtocolErrors`; `not_found` and `unavailable` end a subscription and do not.
///
/// | code                    | when                                                                    |
/// |-------------------------|-------------------------------------------------------------------------|
/// | `invalid_message`       | not a JSON object, a field of the wrong type, a required field missing |
/// | `unknown_op`            | `op` is not subscribe, unsubscribe, auth or ping                        |
/// | `message_too_large`     | (the socket closes 1009 instead: `ClientMessageError.tooLarge`)         |
/// | `not_authenticated`     | subscribe/unsubscribe before `auth`                                     |
/// | `already_authenticated` | a second `auth`                                                         |
/// | `too_many_requests`     | over `RealtimeLimits.maxCommandsWhileAuthenticating` while `auth` runs  |
/// | `invalid_topic`         | not `user` and not `group:<canonical uuid>`                             |
/// | `already_subscribed`    | subscribe to a topic the connection already has                         |
/// | `too_many_topics`       | over `RealtimeLimits.maxTopicsPerConnection`                            |
/// | `not_found`             | the user may not see the topic (no such group, or not an active member) |
/// | `unavailable`           | the server could not read the topic's snapshot or replay (storage)      |
public enum RealtimeErrorCode: String, Sendable, CaseIterable {
    /// Not a JSON object, a field of the wrong type, or a required field missing.
    case invalidMessage = "invalid_message"
    /// `op` is not one of subscribe, unsubscribe, auth, ping.
    case unknownOp = "unknown_op"
    /// A message over `RealtimeLimits.maxInboundMessageBytes` (closes the socket 1009; never sent).
    case messageTooLarge = "message_too_large"
    /// A command before the connection authenticated.
    case notAuthenticated = "not_authenticated"
    /// `auth` on a connection that is authenticated or authenticating.
    case alreadyAuthenticated = "already_authenticated"
    /// Too many commands queued while `auth` is being checked.
    case tooManyRequests = "too_many_requests"
    /// A topic name that is neither `user` nor `group:<uuid>`.
    case invalidTopic = "invalid_topic"
    /// `subscribe` to a topic the connection already has.
    case alreadySubscribed = "already_subscribed"
    /// `subscribe` past `RealtimeLimits.maxTopicsPerConnection`.
    case tooManyTopics = "too_many_topics"
    /// The topic does not exist or the user may not see it — one answer for both, so a client cannot
    /// probe for groups. Ends the subscription.
    case notFound = "not_found"
    /// The topic could not be read (the database failed); nothing about access is implied. Ends the
    /// subscription: the client may subscribe again (resuming with `since`) after a back-off.
    case unavailable
}

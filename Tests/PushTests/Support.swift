import Hashing

/// Bytes of base64url test-vector text (the RFCs print their vectors so).
func b64(_ text: String) -> [UInt8] { Base64URL.decode(text)! }

/// RFC 8291 §5 / Appendix A: the worked example, every value copied from the RFC.
enum RFC8291 {
    static let plaintext = Array("When I grow up, I want to be a watermelon".utf8)
    static let applicationServerPrivate = b64("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")
    static let applicationServerPublic = b64(
        "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
    static let userAgentPrivate = b64("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94")
    static let userAgentPublic = b64(
        "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4")
    static let salt = b64("DGv6ra1nlYgDCS1FRnbzlw")
    static let authSecret = b64("BTBZMqHH6r4Tts7J_aSIgg")
    static let message = b64(
        """
        DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27ml\
        mlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPT\
        pK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN
        """)
}

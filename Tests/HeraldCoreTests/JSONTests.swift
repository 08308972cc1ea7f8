import HeraldCore
import Testing

@Suite("JSON")
struct JSONTests {
    @Test("parses every JSON type and writes it back compactly")
    func roundTrip() throws {
        let text = #"{"a":[1,-2,3.5,1e3,true,false,null],"b":{"c":"d\"\\\/\n\u00e9\ud83d\ude00"},"e":""}"#
        let value = try JSONValue(parsing: text)
        #expect(value["a"] == [1, -2, 3.5, 1000.0, true, false, nil])
        #expect(value["b"]?["c"] == .string("d\"\\/\né😀"))
        #expect(try JSONValue(parsing: value.jsonBytes) == value)
    }

    @Test("rejects malformed JSON with the byte offset", arguments: [
        ("", 0), ("{", 1), (#"{"a":}"#, 5), ("[1,]", 3), ("01", 1), (#"{"a" 1}"#, 5), ("nul", 0), ("1 2", 2),
        ("\"\u{01}\"", 1), (#"{"a":1}x"#, 7),
    ])
    func rejects(text: String, offset: Int) {
        #expect {
            try JSONValue(parsing: text)
        } throws: { error in
            (error as? JSONParseError)?.offset == offset
        }
    }

    @Test("strings keep raw UTF-8 and reject invalid UTF-8")
    func utf8() throws {
        let value = try JSONValue(parsing: Array(#"{"t":"Grüße 😀","a":"plain"}"#.utf8))
        #expect(value["t"] == "Grüße 😀" && value["a"] == "plain")
        for invalid: [UInt8] in [[0x22, 0x61, 0xC3, 0x22], [0x22, 0xFF, 0x22]] {
            #expect {
                try JSONValue(parsing: invalid)
            } throws: { error in
                (error as? JSONParseError)?.offset == 1
            }
        }
    }

    @Test("integers stay integers and control characters are escaped")
    func writer() throws {
        let value: JSONValue = ["n": 1, "d": 1.5, "s": "tab\there\u{01}"]
        let reparsed = try JSONValue(parsing: value.jsonBytes)
        #expect(reparsed == value)
        #expect(value.jsonString.contains(#"\t"#) && value.jsonString.contains(#"\u0001"#))
    }
}

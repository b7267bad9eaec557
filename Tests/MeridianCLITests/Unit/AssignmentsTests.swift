// MARK: - key=value arguments

import MeridianCore
import Testing

@testable import MeridianCLI

@Suite struct AssignmentsTests {
    @Test("values are parsed by type; key= is null; key:=JSON is a JSON literal; id= gives the id")
    func parses() throws {
        let a = try Assignments(
            parsing: ["id=p9", "title=Café=Bar", "category=3", "latitude=", "longitude=-9.1"],
            for: point, allowID: true)
        #expect(a.id == "p9")
        #expect(a.values == ["title": "Café=Bar", "category": 3, "latitude": .null, "longitude": -9.1])
        let b = try Assignments(parsing: [#"s:="""#, "i:=null", "d:=2"], for: thing, allowID: false)
        #expect(b.values == ["s": "", "i": .null, "d": .double(2)])
    }

    @Test(
        "every error names the argument",
        arguments: [
            (
                "category=abc",
                "argument 'category=abc': \"abc\" is not an int (expected a whole number such as 42)"
            ),
            (
                "titel=x",
                "argument 'titel=x': unknown attribute 'titel' for Point (did you mean 'title'?); its attributes are "
                    + "id, title, category, latitude, longitude, updatedAt"
            ),
            ("title", "argument 'title': expected key=value (key= sets null)"),
            ("=3", "argument '=3': the attribute name is missing"),
            ("latitude:=[1]", "argument 'latitude:=[1]': expected a number, found an array"),
            (
                "latitude:={",
                "argument 'latitude:={': not a JSON value: column 2: expected a key in double quotes, "
                    + "found end of line"
            ),
            ("id=p1", "argument 'id=p1': the id is given as the ID argument, not as id=…"),
        ])
    func namesTheArgument(argument: String, message: String) {
        do {
            _ = try Assignments(parsing: [argument], for: point, allowID: false)
            Issue.record("no error for \(argument)")
        } catch {
            #expect(error.status == .badInput)
            #expect(error.message == message)
        }
    }

    @Test("an attribute given twice is an error")
    func twice() {
        #expect(throws: CLIError.self) {
            try Assignments(parsing: ["title=a", "title=b"], for: point, allowID: false)
        }
    }
}

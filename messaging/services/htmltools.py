"""The HTML tokenizer the messaging family reads message HTML with."""

from html.parser import HTMLParser


class LenientHTMLParser(HTMLParser):
    """The standard library's tokenizer, which on Python 3.11 raises AssertionError on
    some malformed `<![` marked sections: those are read as text instead, as browsers
    read broken markup, so no message fails to build over its HTML."""

    def parse_marked_section(self, i: int, report: bool = True) -> int:
        position = self.getpos()
        try:
            return super().parse_marked_section(i, report)
        except AssertionError:
            # The failed scan has already moved the reported position; put it back so
            # later positions stay true to the document.
            self.lineno, self.offset = position
            # "Not complete yet": at the end of input the tokenizer takes it as text.
            return -1

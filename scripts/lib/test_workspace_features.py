"""Unit tests of workspace_features.py's reading of `cargo tree` (run by the lint suite)."""
import unittest

from workspace_features import differences, parse

TREE = """\
app v0.1.0 (/w/app)|
├── tokio v1.0.0|rt,time
│   └── tokio-macros v2.0.0 (proc-macro)|
│       └── syn v2.0.0|full
├── ring v0.17.0|
│   [build-dependencies]
│   └── cc v1.0.0|
└── syn v2.0.0|parsing
"""


class Parse(unittest.TestCase):
    def test_units_by_kind(self) -> None:
        u = parse(TREE)
        self.assertEqual(u["tokio v1.0.0", "target"], {"rt,time"})
        self.assertEqual(u["tokio-macros v2.0.0", "host"], {""})
        self.assertEqual(u["syn v2.0.0", "host"], {"full"})     # under a proc macro
        self.assertEqual(u["cc v1.0.0", "host"], {""})          # a build dependency
        self.assertEqual(u["syn v2.0.0", "target"], {"parsing"})  # the label ended with ring

    def test_only_units_of_a_kind_the_test_build_has_count(self) -> None:
        workspace = parse(TREE)
        binding = {("syn v2.0.0", "target"): {"parsing,full"}, ("cc v1.0.0", "target"): {""}}
        self.assertEqual(len(differences(workspace, binding)), 1)


if __name__ == "__main__":
    unittest.main()

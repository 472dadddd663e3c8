// Executable skill entry point: --help-json prints the tool schema (OpenAI
// wrapper form), --run-json runs it.
const schema = {
  type: "function",
  function: {
    name: "count_words",
    description: "Count the words in a text.",
    parameters: {
      type: "object",
      properties: { text: { type: "string" } },
      required: ["text"],
    },
  },
};
const [flag, payload] = process.argv.slice(2);
if (flag === "--help-json") {
  console.log(JSON.stringify(schema));
} else if (flag === "--run-json") {
  const { text } = JSON.parse(payload);
  const words = text.trim() === "" ? 0 : text.trim().split(/\s+/).length;
  console.log(JSON.stringify({ words }));
} else {
  console.error("usage: execute.js --help-json | --run-json JSON");
  process.exit(64);
}

// Greets from Node and writes a JSON file into the working directory.
const fs = require("fs");
const name = process.argv[2] || "world";
console.log(`hello ${name} from node`);
fs.writeFileSync("node-out.json", JSON.stringify({ name }));

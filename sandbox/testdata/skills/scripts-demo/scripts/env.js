// Prints its whole environment as JSON.
console.log(JSON.stringify(process.env));
